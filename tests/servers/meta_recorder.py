"""A stdio MCP server on the official Python SDK (PyPI `mcp`, in the test
venv) whose one tool, `seen_meta`, answers the `_meta` of the request that
called it, as JSON text: what a client (Quiver, as an upstream client) sent
along, such as W3C trace context (SEP-414)."""

import json

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("meta-recorder")


@server.tool()
def seen_meta(ctx: Context) -> str:
    """Answer the `_meta` of this request, as JSON."""
    meta = ctx.request_context.meta
    if meta is None:
        return "{}"
    if hasattr(meta, "model_dump"):
        meta = meta.model_dump(by_alias=True, exclude_none=True)
    return json.dumps(dict(meta), default=str)


if __name__ == "__main__":
    server.run()
