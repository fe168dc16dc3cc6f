"""The MCP client against a real SDK server (tests/mcp/server_app.py) over stdio and streamable HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TextIO

import pytest

from codeloop.config import McpServerConfig
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.mcp import McpServers, tool_name
from codeloop.tools.pipeline import execute_tool_call
from codeloop.tools.registry import ToolRegistry

SERVER = str(Path(__file__).with_name("server_app.py"))


def stdio_config(name: str = "t", timeout: float = 20, **env: str) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=(SERVER,), env=env, timeout=timeout)


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[TextIO]:
    """The servers' stderr (tracebacks of failing tools) goes here, not to the test output."""
    with open(tmp_path / "server.log", "w") as f:
        yield f


@pytest.fixture
async def servers(tmp_path: Path, errlog: TextIO) -> AsyncIterator[McpServers]:
    s = McpServers({"t": stdio_config(EXTRA="configured")}, cwd=tmp_path, errlog=errlog)
    yield s
    await s.close()


async def test_tools_are_registered_as_server__tool_with_their_schemas(servers: McpServers) -> None:
    registry = ToolRegistry()
    assert await servers.register_tools(registry) == []
    assert sorted(registry.names()) == ["t__add", "t__boom", "t__getenv", "t__pid", "t__slow"]
    add = registry.get("t__add")
    assert add is not None and add.definition.description == "Add two integers."
    assert add.definition.parameters["properties"]["a"]["type"] == "integer"
    assert add.definition.parameters["required"] == ["a", "b"]


async def test_call_result_and_errors_become_tool_results(servers: McpServers, tmp_path: Path) -> None:
    registry = ToolRegistry()
    await servers.register_tools(registry)
    env = LocalExecutionEnvironment(tmp_path)
    ok = await execute_tool_call(registry, "t__add", {"a": 2, "b": 40}, env)
    assert (ok.is_error, ok.output) == (False, "42")
    failed = await execute_tool_call(registry, "t__boom", {"reason": "disk full"}, env)
    assert failed.is_error and "boom: disk full" in failed.output
    invalid = await execute_tool_call(registry, "t__add", {"a": "two"}, env)
    assert invalid.is_error  # the server's JSON Schema is enforced before the call


async def test_server_gets_configured_env_but_not_the_callers_secrets(
        servers: McpServers, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    conn = servers.connections["t"]
    assert (await conn.call("getenv", {"name": "EXTRA"})).text == "configured"
    assert (await conn.call("getenv", {"name": "OPENAI_API_KEY"})).text == "<unset>"


async def test_a_call_that_times_out_is_an_error_result(tmp_path: Path, errlog: TextIO) -> None:
    s = McpServers({"t": stdio_config(timeout=3)}, cwd=tmp_path, errlog=errlog)
    try:
        out = await s.connections["t"].call("slow", {"seconds": 10})
        assert out.is_error and "did not answer within 3 s" in out.text
    finally:
        await s.close()


async def test_a_server_that_cannot_start_is_reported_not_raised(tmp_path: Path, errlog: TextIO) -> None:
    bad = McpServerConfig(name="bad", command=str(tmp_path / "no-such-program"), timeout=10)
    s = McpServers({"bad": bad, "t": stdio_config()}, cwd=tmp_path, errlog=errlog)
    try:
        registry = ToolRegistry()
        errors = await s.register_tools(registry)
        assert len(errors) == 1 and "MCP server 'bad'" in errors[0] and "[mcp_servers.bad]" in errors[0]
        assert "t__add" in registry.names()
    finally:
        await s.close()


async def test_close_stops_the_stdio_server_process(tmp_path: Path, errlog: TextIO) -> None:
    s = McpServers({"t": stdio_config()}, cwd=tmp_path, errlog=errlog)
    pid = int((await s.connections["t"].call("pid", {})).text)
    os.kill(pid, 0)
    await s.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"MCP server process {pid} still running after close()")


def test_tool_names_are_valid_for_every_provider() -> None:
    assert tool_name("files", "read.file v2") == "files__read_file_v2"
    assert len(tool_name("s" * 40, "t" * 40)) == 64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    with open(tmp_path / "http.log", "w") as log:
        proc = subprocess.Popen([sys.executable, SERVER, "http", str(port)], stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.kill()
            proc.wait()


async def test_streamable_http_server(http_server: str, tmp_path: Path) -> None:
    s = McpServers({"web": McpServerConfig(name="web", url=http_server, timeout=20)})
    try:
        registry = ToolRegistry()
        assert await s.register_tools(registry) == []
        result = await execute_tool_call(registry, "web__add", {"a": 1, "b": 2}, LocalExecutionEnvironment(tmp_path))
        assert (result.is_error, result.output) == (False, "3")
    finally:
        await s.close()
