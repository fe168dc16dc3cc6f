"""MCP servers of a session (official ``mcp`` SDK): connections, and their tools registered.

:class:`McpConnection` is one server, usable from any asyncio task. The SDK's client is an
async context manager built on anyio task groups, which must be entered and exited by the
same task. So each connection runs a small owner task that enters the client, signals
readiness, waits for :meth:`McpConnection.close`, and exits; calls from other tasks go
through the open client meanwhile.

:class:`McpServers` starts them lazily, the first time :meth:`McpServers.register_tools` (or
a call) needs them, never at config load. Each tool becomes a :class:`RegisteredTool` named
``server__tool`` with the server's JSON Schema, so it goes through the same pipeline
(validate, policy, truncate, events) as the built-in tools. A server that fails to start
does not stop the session: its error is returned and its tools are absent.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from codeloop.config import McpServerConfig
from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.runner import orphan_proof_argv
from codeloop.llm.types import ImageData, ToolDefinition
from codeloop.tools.effects import WIDEST
from codeloop.tools.registry import RegisteredTool, ToolContext, ToolOutput, ToolRegistry


class McpServerError(RuntimeError):
    """A server could not be started or stopped; the message names the server and the fix."""


@dataclass(frozen=True)
class McpTool:
    """A tool as a server lists it: its name there, description (may be empty) and the JSON
    Schema of its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an exception (task groups wrap them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text


class McpConnection:
    """A started-on-demand connection to one configured server."""

    def __init__(self, config: McpServerConfig, *, cwd: Path | str | None = None, errlog: TextIO | None = None) -> None:
        self.config = config
        self.cwd = cwd
        self.errlog = errlog
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    def _target(self) -> Any:
        c = self.config
        if c.url is not None:
            return c.url
        # Under the orphan-proof wrapper: the server (and its children) die with codeloop.
        command, *args = orphan_proof_argv([c.command or "", *c.args])
        params = StdioServerParameters(command=command, args=args, env=dict(c.env) or None, cwd=self.cwd)
        return stdio_client(params, errlog=self.errlog or sys.stderr)

    async def start(self) -> None:
        """Connect (idempotent); McpServerError when the server does not come up in time."""
        async with self._lock:
            if self._client is not None:
                return
            ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._owner = asyncio.create_task(self._own(ready), name=f"mcp:{self.config.name}")
            try:
                self._client = await asyncio.wait_for(asyncio.shield(ready), self.config.timeout)
            except Exception as exc:
                await self._abandon()
                timed_out = isinstance(exc, TimeoutError)
                why = f"no answer within {self.config.timeout:g} s" if timed_out else _describe(exc)
                raise McpServerError(self._failed(why)) from None

    def _failed(self, why: str) -> str:
        c = self.config
        what = f"url {c.url}" if c.url else f"command {' '.join([c.command or '', *c.args])!r}"
        return (f"MCP server {c.name!r} ({what}) failed to start: {why}; "
                f"check [mcp_servers.{c.name}] in your config.toml")

    async def _own(self, ready: asyncio.Future[Client]) -> None:
        try:
            async with Client(self._target(), read_timeout_seconds=self.config.timeout) as client:
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(_describe(exc)))
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _abandon(self) -> None:
        if self._owner is not None:
            self._owner.cancel()
            try:
                await self._owner
            except BaseException:
                pass
            self._owner = None
        self._client = None

    async def list_tools(self) -> list[McpTool]:
        """Every tool of the server (all pages)."""
        await self.start()
        assert self._client is not None
        tools: list[McpTool] = []
        cursor: str | None = None
        while True:
            page = await asyncio.wait_for(self._client.list_tools(cursor=cursor), self.config.timeout)
            tools += [McpTool(t.name, t.description or "", dict(t.input_schema or {})) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutput:
        """Call ``tool``; every failure (server error, timeout, lost connection) is an error output."""
        name = f"{self.config.name}__{tool}"
        try:
            await self.start()
            assert self._client is not None
            result = await asyncio.wait_for(self._client.call_tool(tool, arguments), self.config.timeout)
        except TimeoutError:
            return ToolOutput(f"{name}: the MCP server did not answer within {self.config.timeout:g} s", is_error=True)
        except McpServerError as exc:
            return ToolOutput(str(exc), is_error=True)
        except Exception as exc:
            return ToolOutput(f"{name} failed: {_describe(exc)}", is_error=True)
        return result_to_output(result)

    async def close(self) -> None:
        """Stop the server (stdio: the process is terminated); idempotent."""
        if self._owner is None:
            return
        self._stop.set()
        try:
            await asyncio.wait_for(self._owner, 10)
        except BaseException:
            await self._abandon()
        self._owner = None
        self._client = None


def result_to_output(result: Any) -> ToolOutput:
    """Text content joined; images kept; other blocks and structured content as JSON text."""
    texts: list[str] = []
    images: list[ImageData] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            try:
                images.append(ImageData(data=base64.b64decode(block.data), media_type=block.mime_type))
            except (ValueError, TypeError):
                texts.append(f"[image of type {block.mime_type} could not be decoded]")
        else:
            texts.append(json.dumps(block.model_dump(mode="json", exclude_none=True), ensure_ascii=False))
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return ToolOutput("\n".join(texts), is_error=bool(result.is_error), images=tuple(images))


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

        # A server's tool may do anything anywhere, and says nothing we could trust: the widest.
        return RegisteredTool(ToolDefinition(tool_name(connection.config.name, tool.name), description,
                                             _schema(tool.input_schema)), executor, WIDEST)

    async def register_tools(self, registry: ToolRegistry) -> list[str]:
        """Start every server (in parallel) and add its tools to ``registry``; returns the start
        errors (for warnings)."""
        async def one(connection: McpConnection) -> list[RegisteredTool] | str:
            try:
                return [self._tool(connection, t) for t in await connection.list_tools()]
            except McpServerError as exc:
                return str(exc)
            except Exception as exc:
                return f"MCP server {connection.config.name!r}: listing its tools failed: {exc}"

        found = await asyncio.gather(*(one(c) for c in self.connections.values()))
        for tool in (t for f in found if isinstance(f, list) for t in f):
            registry.register(tool)
        return [f for f in found if isinstance(f, str)]

    async def close(self) -> None:
        """Stop every started server."""
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)
