"""A stdio MCP server (2025-11-25, standard library only) that misbehaves
on purpose, for the fault tests of Quiver's upstream client. The real
servers (the reference servers from npm and PyPI) cover what works; this
one covers what must not take the host down.

Usage: unruly_mcp.py MODE
  normal   tools `slow` (sleeps `seconds`), `crash` (exits mid-call),
           `grow` (adds a tool, then sends notifications/tools/list_changed);
           calls run on threads; each call's start (`call ID`) and each
           notifications/cancelled (`cancelled ID`) is appended to the file
           $UNRULY_LOG names, if set
  garbage  answers every request with a line that is not JSON
  silent   reads requests and never answers
  huge     lists one tool whose description is 50 MB
  exit     writes a reason to stderr and exits before the handshake
"""

import json
import os
import sys
import threading
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
TOOLS = [
    {"name": "slow", "description": "Sleep, then answer.", "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "crash", "description": "Exit in the middle of the call.", "inputSchema": {"type": "object"}},
    {"name": "grow", "description": "Add a tool and say the list changed.", "inputSchema": {"type": "object"}},
]


LOCK = threading.Lock()


def send(message):
    with LOCK:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def log(event):
    if os.environ.get("UNRULY_LOG"):
        with LOCK, open(os.environ["UNRULY_LOG"], "a") as file:
            file.write(event + "\n")


def result(request, value):
    send({"jsonrpc": "2.0", "id": request["id"], "result": value})


def main():
    if MODE == "exit":
        print("fatal: cannot open the database at /nonexistent", file=sys.stderr, flush=True)
        sys.exit(2)
    print(f"unruly MCP server in mode {MODE}", file=sys.stderr, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            if method == "notifications/cancelled":
                log(f"cancelled {request['params'].get('requestId')}")
            continue  # a notification
        if MODE == "silent":
            continue
        if MODE == "garbage":
            sys.stdout.write("<<< this is not JSON-RPC >>>\n")
            sys.stdout.flush()
            continue
        if method == "initialize":
            result(request, {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "unruly", "version": "1.0.0", "description": "Misbehaves on purpose."},
            })
        elif method == "tools/list":
            if MODE == "huge":
                tools = [{"name": "big", "description": "x" * (50 << 20), "inputSchema": {"type": "object"}}]
            else:
                tools = TOOLS
            result(request, {"tools": tools})
        elif method == "tools/call":
            log(f"call {request['id']}")
            threading.Thread(target=call, args=(request,), daemon=True).start()
        elif method == "ping":
            result(request, {})
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no method {method}"}})


def call(request):
    name = request["params"]["name"]
    arguments = request["params"].get("arguments") or {}
    if name == "slow":
        time.sleep(float(arguments.get("seconds", 0)))
        result(request, {"content": [{"type": "text", "text": "done"}]})
    elif name == "crash":
        print("crashing on purpose", file=sys.stderr, flush=True)
        os._exit(3)
    elif name == "grow":
        TOOLS.append({"name": f"grown_{len(TOOLS)}", "description": "Grown.", "inputSchema": {"type": "object"}})
        result(request, {"content": [{"type": "text", "text": "grown"}]})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    else:
        result(request, {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True})


main()
