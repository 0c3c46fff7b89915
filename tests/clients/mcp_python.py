"""An independent MCP client against `quiver serve`: the official Python SDK.

Usage: python mcp_python.py PATH/TO/quiver

For each transport (stdio, streamable HTTP) and each protocol era (the
2025-11-25 `initialize` handshake, and `auto`, which probes the stateless
2026-07-28 `server/discover` first), it lists the tools, reads the Tier-1
instructions, discovers a tool through `request_tools`, calls it directly
and through `call_tool`, and checks a failing call. Then a two-hop call: Quiver, given an
`mcpServers` file, fronts upstream reference servers (`mcp-server-time`
from this venv, server-everything from tests/servers) and the client calls
them through the `mcp` meta-tool. Last, OAuth: Quiver as a resource server of a
real authorization server (oauth2-mock-server, tests/servers/oauth.mjs); the
client connects with an access token, calls what its scope covers, and is
refused what it does not. Exit status 0 only if every check held.
"""

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

QUIVER = sys.argv[1]
COMMON = ["--no-cache", "serve"]


async def exercise(client: Client, label: str) -> None:
    assert client.server_info is not None and client.server_info.name == "quiver", client.server_info
    assert "`request_tools`" in (client.instructions or ""), "the instructions point at the meta-tools"
    tools = (await client.list_tools()).tools
    request_tools = next(tool for tool in tools if tool.name == "request_tools")
    assert "- calc__evaluate: " in (request_tools.description or ""), "Tier 1 is in the meta-tools' descriptions"
    names = [tool.name for tool in tools]
    for expected in ("request_tools", "search_tools", "call_tool"):
        assert expected in names, f"{expected} not in {names}"
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) for name in names), names

    found = await client.call_tool("request_tools", {"tool_names": ["calc__evaluate"]})
    assert not found.is_error, found
    assert "expression" in found.content[0].text, found

    direct = await client.call_tool("calc__evaluate", {"expression": "6 * 7"})
    assert not direct.is_error and direct.structured_content == {"value": 42}, direct
    generic = await client.call_tool("call_tool", {"name": "calc__evaluate", "arguments": {"expression": "2 + 2"}})
    assert not generic.is_error and generic.structured_content == {"value": 4}, generic
    bad = await client.call_tool("calc__evaluate", {"expression": 7})
    assert bad.is_error, bad
    print(f"{label}: ok (protocol {client.protocol_version}, {len(names)} tools listed)")


async def over_stdio(mode: str) -> None:
    params = StdioServerParameters(command=QUIVER, args=COMMON + ["--stdio", "--no-watch"])
    async with Client(params, mode=mode) as client:
        await exercise(client, f"stdio, mode={mode}")


async def over_http(mode: str) -> None:
    server = subprocess.Popen(
        [QUIVER, *COMMON, "--http", "127.0.0.1:0", "--no-watch"], stderr=subprocess.PIPE, text=True
    )
    try:
        url = None
        for line in server.stderr:
            match = re.search(r"MCP at (http://\S+/mcp)", line)
            if match:
                url = match.group(1)
                break
        assert url, "the server did not say where it listens"
        async with Client(url, mode=mode) as client:
            await exercise(client, f"http, mode={mode}")
    finally:
        server.terminate()
        server.wait(timeout=30)


async def two_hops(mode: str) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    everything = os.path.join(here, "..", "servers", "node_modules", "@modelcontextprotocol",
                              "server-everything", "dist", "index.js")
    time_server = os.path.join(os.path.dirname(sys.executable), "mcp-server-time")
    servers = {"mcpServers": {
        "time": {"command": time_server, "description": "Current time and time-zone conversion"},
        "everything": {"command": "node", "args": [everything, "stdio"]},
    }}
    with tempfile.TemporaryDirectory() as folder:
        config = os.path.join(folder, "servers.json")
        with open(config, "w") as file:
            json.dump(servers, file)
        args = ["--mcp-config", config, "--cache-dir", os.path.join(folder, "cache"), "serve", "--stdio", "--no-watch"]
        async with Client(StdioServerParameters(command=QUIVER, args=args), mode=mode) as client:
            mcp = next(tool for tool in (await client.list_tools()).tools if tool.name == "mcp")
            assert "- time: Current time and time-zone conversion" in (mcp.description or ""), mcp.description
            now = await client.call_tool("mcp", {"subcommand": "call", "server": "time", "tool": "get_current_time",
                                                 "parameters": {"timezone": "UTC"}})
            assert not now.is_error and now.structured_content["timezone"] == "UTC", now
            image = await client.call_tool("mcp", {"subcommand": "call", "server": "everything",
                                                   "tool": "get-tiny-image"})
            assert any(block.type == "image" and block.mime_type == "image/png" for block in image.content), image
            refused = await client.call_tool("mcp", {"subcommand": "call", "server": "everything",
                                                     "tool": "get-sum", "parameters": {"a": "two"}})
            assert refused.is_error, refused
    print(f"two hops, mode={mode}: ok (client -> quiver -> time, everything)")


async def with_a_token(mode: str) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    servers = os.path.join(here, "..", "servers")
    issuer = subprocess.Popen(["node", "oauth.mjs"], cwd=servers, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    server = None
    try:
        ready = json.loads(issuer.stdout.readline())

        def ask(command):
            issuer.stdin.write(json.dumps(command) + "\n")
            issuer.stdin.flush()
            return json.loads(issuer.stdout.readline())

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        resource = f"http://127.0.0.1:{port}/mcp"
        token = ask({"op": "token", "aud": resource, "sub": "python-sdk", "scope": "quiver:calc:read"})["token"]
        with tempfile.TemporaryDirectory() as folder:
            config = os.path.join(folder, "quiver.toml")
            with open(config, "w") as file:
                file.write(f'[auth]\nmode = "oauth"\nissuer = "{ready["issuer"]}"\nresource = "{resource}"\n')
            server = subprocess.Popen([QUIVER, "--config", config, *COMMON, "--http", f"127.0.0.1:{port}",
                                       "--no-watch"], stderr=subprocess.PIPE, text=True)
            for line in server.stderr:
                if "MCP at" in line:
                    break
            bearer = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
            async with Client(streamable_http_client(resource, http_client=bearer), mode=mode) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert "request_tools" in names, names
                result = await client.call_tool("calc__evaluate", {"expression": "6 * 7"})
                assert not result.is_error and result.structured_content == {"value": 42}, result
                try:
                    refused = await client.call_tool("text__slugify", {"text": "a b"})
                    raise AssertionError(f"a tool outside the token's scope answered: {refused}")
                except AssertionError:
                    raise
                except Exception as error:  # the SDK raises on HTTP 403
                    assert "403" in str(error) or "scope" in str(error), error
            anonymous = httpx2.AsyncClient()
            try:
                async with Client(streamable_http_client(resource, http_client=anonymous), mode=mode) as client:
                    await client.list_tools()
                raise AssertionError("a client without a token was served")
            except AssertionError:
                raise
            except Exception:
                pass
    finally:
        if server:
            server.terminate()
            server.wait(timeout=30)
        issuer.stdin.close()
        issuer.wait(timeout=30)
    print(f"http with an OAuth token, mode={mode}: ok")


async def main() -> None:
    for mode in ("legacy", "auto"):
        await over_stdio(mode)
        await over_http(mode)
        await two_hops(mode)
        await with_a_token(mode)


asyncio.run(main())
