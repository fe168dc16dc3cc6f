"""``codeloop acp``: codeloop as an Agent Client Protocol agent over stdio (issue 38).

An editor (Zed, the JetBrains IDEs) starts ``codeloop acp`` and speaks JSON-RPC to it over
stdin/stdout through the ``agent-client-protocol`` SDK. This face only translates:

- ``session/new`` builds what ``codeloop run`` builds (:class:`codeloop.cli.run.Runner`: the
  config files and their trust gate, the model choice with the same key/local-model rules, the
  sandbox, the recorded Session) in the editor's working directory; the ACP session id is the
  codeloop session id, so ``session/load`` (and ``codeloop run --resume``) continue it;
- ``session/prompt`` submits the prompt's text, resources and images; events become session
  updates (``cli/acp_updates.py``); the prompt answers with a stop reason;
- an ask is a pending call of the one store (``policy/pending.py``): the editor is offered it
  with ``session/request_permission`` (allow once / allow always / reject) and its answer is
  given through ``store.decide`` like any other (the first answer wins; ``codeloop approvals``
  answers it too);
- ``session/cancel`` aborts the turn: the running command's process group dies (the Session's
  abort), the prompt answers ``cancelled``, and the next prompt goes on in the same recorded
  conversation.

Stdout carries protocol lines only: file descriptor 1 is moved aside for the protocol and
pointed at stderr before anything else runs, so a stray print cannot corrupt the stream.
Malformed input gets the JSON-RPC error (parse error and invalid request from
``cli/acp_transport.py``; method not found and invalid params from the SDK's router and the
methods here) and the server keeps serving.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from codeloop.cli.acp_updates import Update

AGENT_NAME = "codeloop"
EDITOR = "editor"
"""Who an answer given in the editor was given by, in the store and the session log."""
MODES = {
    "on-risk": ("Ask on risk", "Ask before commands that may change things and edits outside the workspace rules."),
    "always-ask": ("Always ask", "Ask before every call that writes or runs something."),
    "never-ask": ("Never ask", "Run every call without asking (the sandbox still holds)."),
    "plan": ("Plan", "Read only: the agent looks around and answers with a plan."),
}
"""Session modes: codeloop's approval modes and plan mode."""
STOP_REASONS = {"completed": "end_turn", "closed": "end_turn", "aborted": "cancelled", "turn_limit": "max_turn_requests",
                "round_limit": "max_turn_requests", "loop_limit": "max_turn_requests", "budget": "max_turn_requests"}
"""How an input ended (``Session.end_reason``) → the prompt's stop reason."""


def prompt_parts(blocks: list[Any]) -> tuple[str, list[tuple[str, str]]]:
    """The text of a prompt's content blocks (text; a resource link as its URI; an embedded
    text resource as a fenced block under its URI) and its images (mime type, base64)."""
    from acp import schema as s

    parts: list[str] = []
    images: list[tuple[str, str]] = []
    for block in blocks:
        if isinstance(block, s.TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, s.ResourceContentBlock):
            parts.append(f"[{block.name}]({block.uri})")
        elif isinstance(block, s.EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, s.TextResourceContents):
                parts.append(f"{resource.uri}:\n```\n{resource.text}\n```")
            else:
                parts.append(f"({resource.uri}: binary content, not shown)")
        elif isinstance(block, s.ImageContentBlock):
            images.append((block.mime_type, block.data))
    return "\n".join(parts), images


@dataclasses.dataclass
class EditorSession:
    """One ACP session: the Runner of ``codeloop run`` and the updates waiting to be sent."""

    runner: Any
    translator: Any
    queue: asyncio.Queue[Update | None]
    mode: str
    running: bool = False
    pump: asyncio.Task[None] | None = None
    stopping: asyncio.Task[None] | None = None
    """The abort of a cancelled prompt (its commands are killed before the prompt answers)."""
    mode_changed: bool = False
    """The mode changed while a prompt ran: the next prompt reopens the Session with it."""

    @property
    def id(self) -> str:
        return str(self.runner.log_id)


class CodeloopAgent:
    """The ACP ``Agent`` of the SDK: each method is one protocol request."""

    def __init__(self, flags: dict[str, Any], network: str | None, err: Console) -> None:
        self.flags, self.network, self.err = flags, network, err
        self.conn: Any = None
        self.sessions: dict[str, EditorSession] = {}
        self.read_buffers = False
        """The client offers ``fs/read_text_file``: the agent's reads see unsaved buffers."""

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **_: Any) -> Any:
        from importlib.metadata import version

        from acp import PROTOCOL_VERSION
        from acp import schema as s

        fs = client_capabilities.fs if client_capabilities is not None else None
        self.read_buffers = bool(fs is not None and fs.read_text_file)
        return s.InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=s.AgentCapabilities(
                load_session=True,
                prompt_capabilities=s.PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=s.McpCapabilities(http=True, sse=False)),
            auth_methods=[],
            agent_info=s.Implementation(name=AGENT_NAME, title="codeloop", version=version("codeloop")))

    async def authenticate(self, method_id: str, **_: Any) -> Any:
        from acp import RequestError

        raise RequestError.invalid_params({"message": "codeloop takes no authentication: it reads API keys "
                                                      "from its environment and config files"})

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any) -> Any:
        from acp import schema as s

        session = await self._open(cwd, mcp_servers or [], resume=None)
        return s.NewSessionResponse(session_id=session.id, modes=self._modes(session))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           **_: Any) -> Any:
        from acp import RequestError
        from acp import schema as s

        from codeloop.cli.acp_updates import ToolInfo, replay_updates
        from codeloop.sessions import load_events

        if session_id in self.sessions:
            raise RequestError.invalid_params({"message": f"session {session_id} is already open here"})
        try:
            logged = load_events(session_id)
        except (LookupError, OSError, ValueError) as exc:
            raise RequestError.invalid_params({"message": f"cannot load session {session_id!r}: {exc}"}) from None
        session = await self._open(cwd, mcp_servers or [], resume=session_id)
        registry = session.runner.session.profile.tool_registry
        for update in replay_updates(logged, ToolInfo(registry), str(session.runner.settings.root)):
            session.queue.put_nowait(update)
        await session.queue.join()
        return s.LoadSessionResponse(modes=self._modes(session))

    async def set_session_mode(self, mode_id: str, session_id: str, **_: Any) -> Any:
        from acp import RequestError
        from acp import schema as s

        session = self._session(session_id)
        if mode_id not in MODES:
            raise RequestError.invalid_params({"message": f"unknown mode {mode_id!r}: use one of {', '.join(MODES)}"})
        session.mode = mode_id
        if session.running:
            session.mode_changed = True
        else:
            await self._apply_mode(session)
        session.queue.put_nowait(s.CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id))
        await session.queue.join()
        return s.SetSessionModeResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> Any:
        from acp import RequestError
        from acp import schema as s

        from codeloop.cli.acp_updates import plan_update
        from codeloop.cli.commands import Prompt

        session = self._session(session_id)
        if session.running:
            raise RequestError.invalid_request({"message": f"a prompt is already running in session {session_id}: "
                                                           "wait for its answer or send session/cancel"})
        text, images = prompt_parts(prompt)
        loaded = self._images(session, images)
        session.running, session.stopping = True, None
        try:
            if session.mode_changed:
                session.mode_changed = False
                await self._apply_mode(session)
            reason = await session.runner.submit(Prompt(text, loaded))
            if session.stopping is not None:  # cancelled: answer once everything it ran is dead
                await session.stopping
                reason = "aborted"
            elif session.mode == "plan" and reason == "completed" and session.runner.session is not None:
                plan = plan_update(session.runner.session.last_text or "")
                if plan is not None:  # the editor shows the plan's steps as its plan
                    session.queue.put_nowait(plan)
        finally:
            session.running = False
            await session.queue.join()
        if reason == "error":
            raise RequestError.internal_error({"message": session.translator.last_error or "the session failed"})
        return s.PromptResponse(stop_reason=STOP_REASONS.get(reason, "end_turn"))  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None or not session.running or session.runner.session is None:
            return
        if session.stopping is None:
            session.stopping = asyncio.get_running_loop().create_task(session.runner.session.abort())
        await asyncio.shield(session.stopping)

    # -- helpers ---------------------------------------------------------------------------

    def _session(self, session_id: str) -> EditorSession:
        from acp import RequestError

        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"message": f"unknown session {session_id!r}: "
                                                          "create one with session/new or session/load"})
        return session

    def _modes(self, session: EditorSession) -> Any:
        from acp import schema as s

        return s.SessionModeState(current_mode_id=session.mode, available_modes=[
            s.SessionMode(id=mode, name=name, description=about) for mode, (name, about) in MODES.items()])

    async def _apply_mode(self, session: EditorSession) -> None:
        """Give the runner the session's mode; the Session reopens with it at the next prompt."""
        runner = session.runner
        if session.mode == "plan":
            await runner.set_plan(True)
            return
        runner.settings = dataclasses.replace(runner.settings, approval=session.mode)
        await runner.set_plan(False)  # closes the Session: the next prompt reopens it with the new policy

    def _images(self, session: EditorSession, images: list[tuple[str, str]]) -> tuple[Any, ...]:
        from acp import RequestError

        from codeloop.cli.images import vision_problem
        from codeloop.llm.types import ImageData

        if not images:
            return ()
        problem = vision_problem(session.runner.settings.choice)
        if problem is not None:
            raise RequestError.invalid_params({"message": f"the prompt has an image, but {problem}"})
        loaded = []
        for mime, data in images:
            try:
                raw = base64.b64decode(data, validate=True)
            except ValueError:
                raise RequestError.invalid_params({"message": "an image's data is not base64"}) from None
            loaded.append(ImageData(data=raw, media_type=mime))
        return tuple(loaded)

    async def _open(self, cwd: str, mcp_servers: list[Any], resume: str | None) -> EditorSession:
        """A started Runner in ``cwd`` (the workspace), as ``codeloop run`` starts one."""
        from acp import RequestError

        from codeloop.cli.acp_updates import ToolInfo, UpdateTranslator
        from codeloop.cli.model_choice import UsageError
        from codeloop.cli.run import Runner, settle_options

        root = workspace_of(cwd)
        try:
            settings = settle_options(root, dict(self.flags), self.network, self.err)
            settings = dataclasses.replace(settings, mcp_servers=merge_mcp(settings.mcp_servers, mcp_servers))
        except UsageError as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None
        queue: asyncio.Queue[Update | None] = asyncio.Queue()
        holder: dict[str, Any] = {}

        def tools() -> ToolInfo:
            runner = holder.get("runner")
            session = runner.session if runner is not None else None
            if session is None:
                return ToolInfo(None)
            return ToolInfo(session.profile.tool_registry, session.profile.context_window_size)

        translator = UpdateTranslator(queue.put_nowait, tools, str(root))
        mode = "plan" if settings.plan else settings.approval
        editor = EditorSession(None, translator, queue, mode)
        runner = Runner(settings, cast(Any, translator), self.err, ask_client=self._ask_client(editor))
        holder["runner"] = runner
        editor.runner = runner
        runner.wrap_environment = lambda env: self._buffered(env, editor)
        try:
            await runner.start(resume)
        except Exception as exc:
            await runner.close()
            raise RequestError.internal_error({"message": f"{type(exc).__name__}: {exc}"}) from None
        editor.pump = asyncio.get_running_loop().create_task(self._pump(editor))
        self.sessions[editor.id] = editor
        return editor

    def _buffered(self, env: Any, session: EditorSession) -> Any:
        """``env`` with its file changes reported as diffs and, when the editor offers
        ``fs/read_text_file``, its text reads answered from the editor's buffers after
        codeloop's own checks of the path (``environments/editor_buffers.py``)."""
        from codeloop.environments.editor_buffers import EditorBuffersEnvironment

        async def read_buffer(path: str) -> str | None:
            try:
                answer = await self.conn.read_text_file(session_id=session.id, path=path)
            except Exception as exc:  # the editor could not read it: the disk's text is used
                self.err.print(f"acp: fs/read_text_file {path}: {exc}; reading the file on disk",
                               highlight=False, markup=False)
                return None
            return str(answer.content)

        return EditorBuffersEnvironment(env, read_buffer if self.read_buffers else None,
                                        session.translator.changed)

    async def _pump(self, session: EditorSession) -> None:
        """Send the session's updates in order (events arrive synchronously; sending awaits)."""
        while True:
            update = await session.queue.get()
            try:
                if update is not None and self.conn is not None:
                    await self.conn.session_update(session_id=session.id, update=update)
            except Exception as exc:  # the editor went away: the updates have nowhere to go
                self.err.print(f"acp: session update not sent: {exc}", highlight=False, markup=False)
            finally:
                session.queue.task_done()

    def _ask_client(self, session: EditorSession) -> Any:
        """The editor as a client of the pending store (``tools/pipeline.py`` ``AskClient``):
        each new pending call is offered with ``session/request_permission``; the option picked
        is given to the store as the editor's answer (once; an answer given elsewhere first wins).
        A cancelled request (the editor cancelled the prompt) answers nothing: the cancel
        withdraws the call."""
        from acp import schema as s

        from codeloop.policy.pending import AlreadyDecided

        async def ask(entry: Any, store: Any) -> None:
            await session.queue.join()  # the editor knows the tool call before it is asked about it
            options = [s.PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once")]
            if "always" in entry.grants:
                options.append(s.PermissionOption(option_id="allow_always", kind="allow_always",
                                                  name=f"Always allow ({', '.join(entry.remember_as)})"))
            options.append(s.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"))
            call = s.ToolCallUpdate(tool_call_id=entry.call_id or entry.id, title=entry.summary(200),
                                    status="pending", raw_input=dict(entry.arguments))
            try:
                answer = await self.conn.request_permission(session_id=session.id, tool_call=call, options=options)
            except Exception as exc:  # the editor failed to answer: refuse, saying why
                store.decide(entry.id, "deny", "codeloop", f"the editor's permission request failed ({exc})")
                return
            outcome = answer.outcome
            if isinstance(outcome, s.DeniedOutcome):
                return
            picked = outcome.option_id
            if picked not in ("allow_once", "allow_always", "reject_once"):
                store.decide(entry.id, "deny", EDITOR, f"the editor answered with an unknown option {picked!r}")
                return
            verdict = "deny" if picked == "reject_once" else "approve"
            scope = "always" if picked == "allow_always" and "always" in entry.grants else "once"
            decided = store.decide(entry.id, verdict, EDITOR, "" if verdict == "approve" else "the user declined",
                                   scope)
            if isinstance(decided, AlreadyDecided):
                self.err.print(decided.describe(entry.id), highlight=False, markup=False)

        return ask

    async def cancel_all(self) -> None:
        """Cancel every running prompt (the editor closed the connection)."""
        for session_id in list(self.sessions):
            await self.cancel(session_id)

    async def close(self) -> None:
        for session in list(self.sessions.values()):
            with contextlib.suppress(Exception):
                await session.runner.close()
            if session.pump is not None:
                session.pump.cancel()


def workspace_of(cwd: str) -> Path:
    """The workspace a session's ``cwd`` names: an absolute path of a directory (invalid params
    otherwise)."""
    from acp import RequestError

    root = Path(cwd)
    if not root.is_absolute() or not root.is_dir():
        raise RequestError.invalid_params({"message": f"cwd {cwd!r} is not an absolute path of a directory"})
    return root.resolve()


def merge_mcp(configured: Any, offered: list[Any]) -> Any:
    """The config files' MCP servers plus the editor's (``session/new``'s ``mcpServers``: stdio
    and HTTP); an editor's server of the same name wins. SSE servers are not offered
    (``mcpCapabilities.sse`` is false)."""
    from acp import schema as s

    from codeloop.config import McpServerConfig

    merged = dict(configured or {})
    for server in offered:
        if isinstance(server, s.McpServerStdio):
            merged[server.name] = McpServerConfig(server.name, command=server.command, args=tuple(server.args),
                                                  env={v.name: v.value for v in server.env})
        elif isinstance(server, s.HttpMcpServer):
            merged[server.name] = McpServerConfig(server.name, url=server.url)
    return merged


async def serve(flags: dict[str, Any], network: str | None, protocol_fd: int, err: Console) -> None:
    """Serve the protocol on stdin and ``protocol_fd`` until the editor closes stdin."""
    from acp.agent.connection import AgentSideConnection

    from codeloop.cli.acp_transport import ProtocolTransport, streams

    reader, write = await streams(protocol_fd)
    agent = CodeloopAgent(flags, network, err)
    transport = ProtocolTransport(reader, write)
    transport.on_eof = agent.cancel_all
    conn = AgentSideConnection(cast(Any, agent), transport, listening=False)
    try:
        await conn.listen()
    finally:
        await agent.close()
        await conn.close()


def register(app: typer.Typer) -> None:
    """Add ``codeloop acp``."""

    @app.command("acp")
    def acp_command(
        model: str | None = typer.Option(None, "--model", help="Model id (default: the profile's)."),
        provider: str | None = typer.Option(None, "--provider",
                                            help="openai, anthropic, gemini or openai_compatible."),
        profile: str | None = typer.Option(None, "--profile", help="openai, anthropic, gemini or text."),
        base_url: str | None = typer.Option(None, "--base-url", help="API root, e.g. http://127.0.0.1:8080/v1."),
        sandbox: str | None = typer.Option(None, "--sandbox",
                                           help="read-only, workspace-write (default) or off (no sandbox)."),
        network: str | None = typer.Option(None, "--network", help="on or off for commands (as codeloop run)."),
        approval: str | None = typer.Option(
            None, "--approval", help="The mode a session starts in: never-ask, on-risk (default) or always-ask; "
                                     "the editor's mode menu switches it (and to plan)."),
        max_turns: int | None = typer.Option(None, "--max-turns", min=0, max=1_000_000,
                                             help="Stop a prompt after this many turns (0 = no limit)."),
    ) -> None:
        """Serve codeloop to an editor over the Agent Client Protocol (JSON-RPC on stdin/stdout).

        The editor starts this command; each session works in the editor's project directory with
        the model, sandbox and approval rules codeloop run would use there (config files, API keys,
        else the local model). Calls that need approval are offered as the editor's permission
        requests (and can be answered with codeloop approvals too). Logs go to stderr.

        \b
        Example (Zed, settings.json):
          "agent_servers": {"codeloop": {"command": "codeloop", "args": ["acp"]}}
        By hand, one request on stdin (the reply is one JSON line on stdout):
          echo '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}' | codeloop acp

        See docs/editors.md.
        """
        from rich.console import Console

        from codeloop.policy import APPROVAL_MODES
        from codeloop.tools.call_path import SandboxOptionError, check_sandbox_options

        # Options are checked before the editor connects: a bad one is one line and exit 2, not
        # an error at every session/new.
        try:
            check_sandbox_options(sandbox or "workspace-write", network)
        except SandboxOptionError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        if approval is not None and approval not in APPROVAL_MODES:
            typer.echo(f"error: unknown --approval {approval!r}: use one of {', '.join(APPROVAL_MODES)}", err=True)
            raise typer.Exit(2)
        # Stdout is the protocol's alone: keep the real one aside and send fd 1 to stderr, so
        # anything printed by accident (a library, a warning) cannot corrupt the stream.
        protocol_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        err = Console(stderr=True, soft_wrap=True, highlight=False)
        flags = {"model": model, "provider": provider, "profile": profile, "base_url": base_url, "sandbox": sandbox,
                 "approval": approval, "max_turns": max_turns, "max_retries": None, "diagnostics": None,
                 "rescues": None, "strategy": None, "max_cost": None, "max_tokens": None, "max_time": None, "model_file": None,
                 "gpu_layers": None, "candidates": None}
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(flags, network, protocol_fd, err))
