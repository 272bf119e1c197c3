"""A tiny real MCP server for the tests, built with the SDK (MCPServer in mcp 2, FastMCP in 1).

Run as ``python mcp_server.py`` (stdio), ``python mcp_server.py http PORT`` (streamable HTTP) or
``python mcp_server.py sse PORT`` (HTTP+SSE, served at ``/sse``).
"""

from __future__ import annotations

import sys

try:
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef]

server = MCPServer("notes", instructions="Team notes: search and add plain-text notes.")
NOTES = ["deploy checklist: run migrations first", "oncall rota is in the wiki"]


@server.tool()
def search_notes(query: str) -> str:
    """Search the team's notes by keyword and return matching lines."""
    hits = [n for n in NOTES if query.lower() in n.lower()]
    return "\n".join(hits) or "no match"


@server.tool()
def add_numbers(a: int, b: int) -> int:
    """Add two integers (arithmetic sum)."""
    return a + b


@server.tool()
def explode(reason: str) -> str:
    """Always fails, to test error reporting."""
    raise ValueError(f"exploded: {reason}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) > 2 and sys.argv[1] == "sse":
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
