"""A real MCP server written with the SDK (``MCPServer``, formerly FastMCP) for the client tests.

Run: ``python server_app.py`` (stdio) or ``python server_app.py http PORT`` (streamable HTTP).
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("codeloop-test")


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="Read an environment variable of the server process.")
def getenv(name: str) -> str:
    return os.environ.get(name, "<unset>")


@server.tool(description="The server process id.")
def pid() -> str:
    return str(os.getpid())


@server.tool(description="Always fails.")
def boom(reason: str) -> str:
    raise ToolError(f"boom: {reason}")


@server.tool(description="Sleeps, then answers.")
def slow(seconds: float) -> str:
    time.sleep(seconds)
    return "woke up"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
