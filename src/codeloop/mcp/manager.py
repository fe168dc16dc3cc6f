"""The MCP servers of a session: start them, register their tools, stop them (issue 9 "MCP").

Servers start lazily, the first time :meth:`McpServers.register_tools` (or a call) needs
them, never at config load. Each tool becomes a :class:`RegisteredTool` named
``server__tool`` with the server's JSON Schema, so it goes through the same pipeline
(validate, policy, truncate, events) as the built-in tools. A server that fails to start
does not stop the session: its error is returned and its tools are absent.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from codeloop.config.files import McpServerConfig
from codeloop.environments.base import ExecutionEnvironment
from codeloop.llm.types import ToolDefinition
from codeloop.mcp.connection import McpConnection, McpServerError, McpTool
from codeloop.tools.registry import RegisteredTool, ToolContext, ToolOutput, ToolRegistry

_PROVIDER_NAME = re.compile(r"[^A-Za-z0-9_]")
MAX_TOOL_NAME = 64
"""Longest tool name every provider accepts."""


def tool_name(server: str, tool: str) -> str:
    """``server__tool``, with characters a tool name may not hold (``ToolDefinition``: letters,
    digits, ``_``) replaced by ``_``, at most 64 long."""
    return _PROVIDER_NAME.sub("_", f"{server}__{tool}")[:MAX_TOOL_NAME]


def _schema(raw: Mapping[str, Any]) -> dict[str, Any]:
    schema = dict(raw)
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {}} if not schema else {**schema, "type": "object"}
    return schema


class McpServers:
    """The configured servers of one session; ``await close()`` when the session ends."""

    def __init__(self, servers: Mapping[str, McpServerConfig], *, cwd: Path | str | None = None,
                 errlog: TextIO | None = None) -> None:
        self.connections = {name: McpConnection(cfg, cwd=cwd, errlog=errlog) for name, cfg in servers.items()}

    def _tool(self, connection: McpConnection, tool: McpTool) -> RegisteredTool:
        description = tool.description or f"Tool {tool.name} of the MCP server {connection.config.name}."

        async def executor(arguments: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
            return await connection.call(tool.name, arguments)

        return RegisteredTool(ToolDefinition(tool_name(connection.config.name, tool.name), description,
                                             _schema(tool.input_schema)), executor)

    async def tools(self) -> tuple[list[RegisteredTool], list[str]]:
        """Start every server (in parallel) and list its tools: ``(tools, errors)``."""
        async def one(connection: McpConnection) -> list[RegisteredTool] | str:
            try:
                return [self._tool(connection, t) for t in await connection.list_tools()]
            except McpServerError as exc:
                return str(exc)
            except Exception as exc:
                return f"MCP server {connection.config.name!r}: listing its tools failed: {exc}"

        found = await asyncio.gather(*(one(c) for c in self.connections.values()))
        tools = [t for f in found if isinstance(f, list) for t in f]
        errors = [f for f in found if isinstance(f, str)]
        return tools, errors

    async def register_tools(self, registry: ToolRegistry) -> list[str]:
        """Add every server's tools to ``registry``; returns the start errors (for warnings)."""
        tools, errors = await self.tools()
        for tool in tools:
            registry.register(tool)
        return errors

    async def close(self) -> None:
        """Stop every started server."""
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)
