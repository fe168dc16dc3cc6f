"""An editor for ``codeloop acp`` tests: the SDK's own client side (``acp.ClientSideConnection``)
over a real ``codeloop acp`` subprocess, recording every line the agent writes on stdout and
checking each against the SDK's schema models."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import schema as s
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from test_run_cli import CODELOOP, isolated_env

AGENT = ["--profile", "anthropic", "--sandbox", "off"]
"""A model profile with structured tool calls; no sandbox, so the tests see the command's processes."""
WAIT = 60.0
"""How long a test waits for the agent before giving up (not a measured threshold)."""
RESULTS = {"initialize": s.InitializeResponse, "session/new": s.NewSessionResponse,
           "session/load": s.LoadSessionResponse, "session/prompt": s.PromptResponse,
           "session/set_mode": s.SetSessionModeResponse}
"""The SDK's model of each request's result."""
AGENT_REQUESTS = {"session/request_permission": s.RequestPermissionRequest,
                  "fs/read_text_file": s.ReadTextFileRequest, "fs/write_text_file": s.WriteTextFileRequest}
"""The SDK's model of each request the agent may send."""


class Editor:
    """The client half: answers permission requests from a script, serves unsaved buffers."""

    def __init__(self, answers: list[str] | None = None, buffers: dict[str, str] | None = None) -> None:
        self.answers: deque[str] = deque(answers or [])
        """Option ids to pick, in order; "cancelled" answers cancelled; none left: the request waits."""
        self.buffers = buffers or {}
        self.updates: list[Any] = []
        self.permissions: list[tuple[Any, list[Any]]] = []
        self.asked = asyncio.Event()
        self.reads: list[str] = []
        self.hold: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        """Resolved with an answer for a request that came when no scripted answer was left."""

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        self.permissions.append((tool_call, options))
        self.asked.set()
        answer = self.answers.popleft() if self.answers else await self.hold
        if answer == "cancelled":
            return s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))
        return s.RequestPermissionResponse(outcome=s.AllowedOutcome(outcome="selected", option_id=answer))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **_: Any) -> Any:
        self.reads.append(path)
        return s.ReadTextFileResponse(content=self.buffers[path])

    def of(self, kind: type) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def text(self) -> str:
        return "".join(u.content.text for u in self.of(s.AgentMessageChunk))


class Agent:
    """A running ``codeloop acp`` and the SDK connection to it."""

    def __init__(self, proc: asyncio.subprocess.Process, conn: ClientSideConnection, lines: list[bytes],
                 sent: dict[Any, str]) -> None:
        self.proc, self.conn, self.lines, self.sent = proc, conn, lines, sent

    async def write_raw(self, data: bytes) -> None:
        """Bytes straight onto the agent's stdin (malformed input)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def write_raw_request(self, method: str, params: Any) -> dict[str, Any]:
        """One request written by hand (ids from 1000 up, apart from the SDK's), and its answer."""
        self.raw_id = getattr(self, "raw_id", 999) + 1
        await self.write_raw(json.dumps({"jsonrpc": "2.0", "id": self.raw_id, "method": method,
                                         "params": params}).encode() + b"\n")
        return await self.answer_to(self.raw_id)

    async def answer_to(self, request_id: Any) -> dict[str, Any]:
        """The agent's reply line to the request with this id."""
        for _ in range(int(WAIT / 0.02)):
            for line in self.lines:
                message = json.loads(line)
                if "method" not in message and message.get("id") == request_id:
                    return dict(message)
            await asyncio.sleep(0.02)
        raise AssertionError(f"no answer to request {request_id!r}")

    async def start_session(self, workspace: Path, fs: bool = False) -> str:
        caps = s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=fs, write_text_file=False))
        init = await self.conn.initialize(protocol_version=1, client_capabilities=caps)
        assert init.protocol_version == 1 and init.agent_capabilities.load_session
        new = await self.conn.new_session(cwd=str(workspace), mcp_servers=[])
        return new.session_id

    def check_protocol(self) -> None:
        """Every stdout line is one JSON-RPC message the SDK's models accept."""
        assert self.lines, "the agent wrote nothing"
        for raw in self.lines:
            message = json.loads(raw)
            assert message["jsonrpc"] == "2.0", raw
            if "method" in message:
                method, params = message["method"], message["params"]
                if method == "session/update":
                    s.SessionNotification.model_validate(params)
                else:
                    AGENT_REQUESTS[method].model_validate(params)
            elif "error" in message:
                error = message["error"]
                assert isinstance(error["code"], int) and isinstance(error["message"], str), raw
                assert set(message) == {"jsonrpc", "id", "error"}, raw
            else:
                method = self.sent.get(message["id"])
                if method in RESULTS:
                    RESULTS[method].model_validate(message["result"])


@asynccontextmanager
async def codeloop_acp(editor: Editor, workspace: Path, base_url: str, *extra: str,
                       env: dict[str, str] | None = None) -> AsyncIterator[Agent]:
    """Start ``codeloop acp`` in ``workspace``'s parent (the editor's directory is not the
    project's) and connect the SDK's client to it; on exit, close stdin and wait for the end."""
    proc = await asyncio.create_subprocess_exec(
        CODELOOP, "acp", "--base-url", base_url, *AGENT, *extra, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env or isolated_env(workspace),
        cwd=workspace.parent, limit=50 * 1024 * 1024)
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[bytes] = []
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    stdout = proc.stdout

    async def tee() -> None:
        while line := await stdout.readline():
            lines.append(line)
            reader.feed_data(line)
        reader.feed_eof()

    sent: dict[Any, str] = {}

    def observe(event: StreamEvent) -> None:
        if event.direction == StreamDirection.OUTGOING and "method" in event.message and "id" in event.message:
            sent[event.message["id"]] = event.message["method"]

    teeing = asyncio.create_task(tee())
    conn = ClientSideConnection(editor, proc.stdin, reader, observers=[observe])
    agent = Agent(proc, conn, lines, sent)
    try:
        yield agent
    finally:
        if proc.returncode is None:
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), WAIT)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        await teeing
        await conn.close()
        if proc.stderr is not None:
            agent.stderr = (await proc.stderr.read()).decode()  # type: ignore[attr-defined]
