"""MCP client for ``codeloop run`` (official ``mcp`` SDK; docs/mcp.md).

Public API::

    servers = McpServers(config.mcp_servers, cwd=workspace)
    errors = await servers.register_tools(profile.tool_registry)   # tools named server__tool
    ...
    await servers.close()
"""

from codeloop.mcp.connection import (
    McpConnection,
    McpServerError,
    McpServers,
    McpTool,
    result_to_output,
    tool_name,
)

__all__ = ["McpConnection", "McpServerError", "McpServers", "McpTool", "result_to_output", "tool_name"]
