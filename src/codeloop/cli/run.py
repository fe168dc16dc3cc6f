"""``codeloop run ["TASK"]``: run the agent loop in a workspace (DESIGN contract, issue 9).

Model choice, in order: ``--provider``/``--base-url`` when given; else the first API key
set (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``/``GOOGLE_API_KEY``);
else the local llama.cpp model (installed and started on first use) with the ``text``
profile. Options left out come from the config files (``codeloop.config``: project, then
user). Output: rich text as it happens; ``--json`` one event per line on stdout (schema
``docs/events.schema.json``); ``--quiet`` only the final answer. Every run is recorded
(``codeloop.sessions``; ``--resume ID``/``--continue``); MCP servers come from the config.
Without TASK: a chat on the terminal (:func:`run_chat`; keys in docs/agent.md).

Exit codes: 0 completed, 1 the session failed (provider/auth error), 2 bad usage or
configuration, 3 a turn or round limit stopped the agent, 130 interrupted.

Over 500 lines because the one command owns its option merging, terminal (approval
prompt, steering, chat) and session lifecycle; ``codeloop.cli`` modules are one per face.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:  # rich and the agent load inside the command: `codeloop --help` stays fast
    from rich.console import Console

    from codeloop.agent import events as ev


def escape(text: str) -> str:
    """``rich.markup.escape``, imported on first use (cold start of ``codeloop --help``)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)

EXIT_CODES = {"completed": 0, "error": 1, "round_limit": 3, "turn_limit": 3, "aborted": 130, "closed": 0}
"""Exit code by how the session ended."""

PROVIDER_KEYS = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
"""Environment variables holding each provider's key, in lookup order."""
PROVIDER_PROFILE = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "openai_compatible": "text"}
"""Default profile for each provider."""
SANDBOX_MODES = ("read-only", "workspace-write", "full")
LOCAL_MODEL = "1.5b"
"""Local model used without an API key (``0.5b`` is faster but rarely finishes a task)."""


class UsageError(Exception):
    """A one-line message for the user: what is wrong and how to fix it (exit 2)."""


@dataclass(frozen=True)
class ModelChoice:
    """Which provider, profile and model a run uses."""

    provider: str
    """``openai``, ``anthropic``, ``gemini`` or ``openai_compatible``."""
    profile: str
    """Profile id."""
    model: str | None
    """Model id; None = the profile's default."""
    base_url: str | None
    """API root override."""
    api_key: str | None
    """The key found in the environment (never printed)."""
    local: bool = False
    """True when the local llama.cpp server must be started."""


def choose_model(
    provider: str | None, profile: str | None, model: str | None, base_url: str | None, environ: dict[str, str]
) -> ModelChoice:
    """Resolve the options and environment into a :class:`ModelChoice`; raises UsageError."""
    from codeloop.profiles import PROFILE_IDS

    if profile is not None and profile not in PROFILE_IDS:
        raise UsageError(f"unknown --profile {profile!r}: use one of {', '.join(PROFILE_IDS)}")
    local = False
    if provider is None:
        if base_url:
            provider = "openai_compatible"
        else:
            provider = next((p for p, keys in PROVIDER_KEYS.items() if any(environ.get(k) for k in keys)), None)
            if provider is None:
                provider, local = "openai_compatible", True
    if provider not in PROVIDER_PROFILE:
        raise UsageError(f"unknown --provider {provider!r}: use one of {', '.join(PROVIDER_PROFILE)}")
    keys = PROVIDER_KEYS.get(provider, ("OPENAI_API_KEY",))
    api_key = next((environ[k] for k in keys if environ.get(k)), None)
    if provider in PROVIDER_KEYS and not api_key:
        raise UsageError(f"no API key for provider {provider!r}: set {' or '.join(keys)} in the environment")
    env_url = environ.get(f"{provider.upper()}_BASE_URL") if provider in PROVIDER_KEYS else None
    return ModelChoice(provider, profile or PROVIDER_PROFILE[provider], model, base_url or env_url, api_key, local)


def start_local_model(choice: ModelChoice) -> ModelChoice:
    """``choice`` pointed at the local llama.cpp server of ``choice.model`` (default
    :data:`LOCAL_MODEL`), installed and started as needed; raises LocalModelError."""
    from codeloop.llm.llama_install import spec_for
    from codeloop.llm.llama_server import ensure_local_server

    local_model = choice.model or LOCAL_MODEL
    spec = spec_for(local_model)
    base_url = ensure_local_server(local_model)
    # The served model's id (e.g. qwen2.5-coder-1.5b-instruct), not the size alias, is what
    # the status line, the session log and the context-window lookup should see.
    return ModelChoice(choice.provider, choice.profile, spec.model_id, base_url, None, True)


def fix_hints(choice: ModelChoice) -> dict[str, str]:
    """What to change when the provider refuses the key or does not know the model,
    naming the variable, flag or setting (by error type of the ``error`` event)."""
    keys = " or ".join(PROVIDER_KEYS.get(choice.provider, ("OPENAI_API_KEY",)))
    where = "--base-url (or base_url in .codeloop/config.toml)"
    return {
        "AuthenticationError": f"set a valid key in {keys}" + (f", or check {where}" if choice.base_url else ""),
        "NotFoundError": ("pass a model this provider serves with --model ID (or set model in "
                          f".codeloop/config.toml or ~/.config/codeloop/config.toml); check {where}"),
    }


def build_client(choice: ModelChoice) -> Any:
    """A Client holding the one adapter the choice needs."""
    from codeloop.llm.client import Client

    adapter: Any
    if choice.provider == "openai":
        from codeloop.llm.adapters.openai import OpenAIAdapter

        adapter = OpenAIAdapter(api_key=choice.api_key, base_url=choice.base_url)
    elif choice.provider == "anthropic":
        from codeloop.llm.adapters.anthropic import AnthropicAdapter

        adapter = AnthropicAdapter(api_key=choice.api_key, base_url=choice.base_url)
    elif choice.provider == "gemini":
        from codeloop.llm.adapters.gemini import GeminiAdapter

        adapter = GeminiAdapter(api_key=choice.api_key, base_url=choice.base_url)
    else:
        from codeloop.llm.adapters.base import AdapterTimeout
        from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter

        # Local models on a CPU can read a long prompt for minutes before the first token.
        timeout = AdapterTimeout(connect=10.0, request=900.0, stream_read=600.0) if choice.local else None
        # Our llama-server runs with the prompt cache off (identical outputs run to run, for
        # benchmarks). An agent's history only grows, and re-reading all of it at ~50 tokens/s
        # on 2 cores costs minutes per step, so the embedded default asks for the cache.
        extra = {"cache_prompt": True} if choice.local else None
        adapter = OpenAICompatibleAdapter(choice.base_url or "http://127.0.0.1:8080/v1", api_key=choice.api_key,
                                          timeout=timeout, extra_body=extra)
    return Client({choice.provider: adapter})


def resolve_sandbox(sandbox: str, explicit: bool, err: Console) -> str:
    """The sandbox mode to use. When bubblewrap cannot run here, a default (not chosen by
    the user) falls back to ``full`` with a loud warning; an explicit choice is a UsageError."""
    if sandbox == "full":
        return sandbox
    from codeloop.environments.sandbox import probe_bwrap

    why = probe_bwrap()
    if why is None:
        return sandbox
    fix = ("install bubblewrap (apt-get install bubblewrap / dnf install bubblewrap) and allow "
           "unprivileged user namespaces")
    if explicit:
        raise UsageError(f"--sandbox {sandbox} needs bubblewrap, which cannot run here ({why}): {fix}, "
                         "or pass --sandbox full")
    err.print(f"[bold red]warning:[/] [red]NO SANDBOX: {escape(why)}; commands run with your full "
              f"permissions. To sandbox them, {escape(fix)}. Pass --sandbox full to silence this.[/]")
    return "full"


def build_environment(cwd: Path, sandbox: str, network: bool) -> Any:
    """The workspace environment: local for ``full``, bubblewrap for the other modes."""
    if sandbox == "full":
        from codeloop.environments.local import LocalExecutionEnvironment

        return LocalExecutionEnvironment(str(cwd))
    from codeloop.environments.sandbox import SandboxedExecutionEnvironment

    return SandboxedExecutionEnvironment(str(cwd), mode=sandbox, network=network)  # type: ignore[arg-type]


class NoTerminalError(Exception):
    """Approval is needed but nobody can answer (``--json`` or no terminal)."""


NO_TERMINAL = ("no terminal to ask for approval: pass --approval never-ask to allow such calls, "
               "or run codeloop in a terminal and answer the prompt")


def take_lines(buffer: bytes) -> tuple[list[str], bytes]:
    """The complete lines of ``buffer`` (decoded, invalid UTF-8 replaced, a trailing CR
    dropped) and the unfinished rest. Splitting on ``\\n`` never cuts a UTF-8 character."""
    *complete, rest = buffer.split(b"\n")
    return [raw.removesuffix(b"\r").decode("utf-8", "replace") for raw in complete], rest


class Terminal:
    """The one reader of stdin (a tty): routes each typed line to a pending approval
    question, else to ``on_line`` (steering in a chat). Lines are read with the event
    loop's reader so nothing blocks and no thread is left behind."""

    def __init__(self, err: Console) -> None:
        import asyncio

        self.err = err
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._buffer = b""
        self._question: asyncio.Future[str] | None = None
        self.on_line: Any = None
        self.before_output: Any = None
        """Called before this class prints (hides the live status line)."""
        """Called with a typed line when no question waits (else the line is queued)."""
        self.interactive = False
        """True when stdin is a terminal being read (approval questions can be asked)."""
        self.reading = False

    def start(self, *, pipes: bool = False) -> bool:
        """Start reading stdin; False when it is not a terminal (nor a pipe, with ``pipes``).
        Approval questions are only asked on a terminal."""
        import asyncio

        tty = sys.stdin.isatty()
        if not (tty or pipes):
            return False
        try:
            asyncio.get_running_loop().add_reader(sys.stdin.fileno(), self._readable)
        except (NotImplementedError, OSError, ValueError, PermissionError):
            return False
        self.reading, self.interactive = True, tty
        return True

    def stop(self) -> None:
        import asyncio

        if self.reading:
            asyncio.get_running_loop().remove_reader(sys.stdin.fileno())
            self.reading = self.interactive = False

    def _readable(self) -> None:
        chunk = os.read(sys.stdin.fileno(), 65536)
        if not chunk:
            self.stop()
            self._deliver(None)
            return
        lines, self._buffer = take_lines(self._buffer + chunk)
        for line in lines:
            self._deliver(line)

    def _deliver(self, line: str | None) -> None:
        if self._question is not None and not self._question.done():
            self._question.set_result(line or "")
        elif self.on_line is not None and line is not None:
            if self.before_output is not None:
                self.before_output()
            self.on_line(line)
        else:
            self.lines.put_nowait(line)

    async def ask(self, request: Any) -> Any:
        """The approval prompt of ``approval_policy``: y / n / always."""
        import asyncio

        if self.before_output is not None:
            self.before_output()
        if not self.interactive:
            self.err.print(f"[yellow]not run:[/] {escape(request.summary[:200])} ({escape(request.reason)}); "
                           f"{escape(NO_TERMINAL)}")
            raise NoTerminalError(NO_TERMINAL)
        remember = ", ".join(request.remember_as) or "this call"
        self.err.print(f"\n[bold yellow]Approve?[/] {escape(request.summary[:500])}\n  [dim]{escape(request.reason)}[/]\n"
                       f"  [y] yes  [n] no  [a] always ({escape(remember)}) > ", end="")
        self._question = asyncio.get_running_loop().create_future()
        try:
            answer = (await self._question).strip().lower()
        finally:
            self._question = None
        return {"y": "y", "yes": "y", "a": "always", "always": "always"}.get(answer, "n")


class Renderer:
    """Turns events into terminal output: rich (default), JSON lines or quiet. In rich mode
    on a terminal, a live status line (``cli/status.py``) shows progress while a turn runs."""

    def __init__(self, mode: str, out: Console, err: Console, *, live_status: bool | None = None) -> None:
        from codeloop.cli.status import StatusLine, Usage

        self.mode, self.out, self.err = mode, out, err
        self.final_text = ""
        self._streamed = False
        self.usage = Usage()
        """Since the last input: model calls, tokens, start time."""
        self._busy = False
        """Between a user input and the end of its turn."""
        self.model = ""
        """The model of the session (from SESSION_START), for prices."""
        if live_status is None:
            live_status = mode == "rich" and err.is_terminal and not err.is_dumb_terminal
        self.status = StatusLine(err, lambda: self.usage, lambda: self.model) if live_status else None
        self.hints: dict[str, str] = {}
        """Fix for an error type (``AuthenticationError``: which variable to set ...)."""

    def summary(self) -> str:
        """One line for the end of an input: calls, tokens, elapsed time, cost when the
        catalog knows the model's prices."""
        calls = self.usage.calls
        return f"{calls} model call{'s' if calls != 1 else ''} · tokens {self.usage.describe(self.model)}"

    def pause(self) -> None:
        """Hide the status line before something else is printed (e.g. a question)."""
        if self.status is not None:
            self.status.hide()

    def __call__(self, event: ev.SessionEvent) -> None:
        from codeloop.agent import events as ev

        if self.mode == "json":
            sys.stdout.write(json.dumps(ev.event_to_json(event), default=str) + "\n")
            sys.stdout.flush()
            if isinstance(event, ev.ErrorEvent):
                self._print_error(event)
            return
        if isinstance(event, ev.AssistantTextEnd):
            self.final_text = event.text
        if self.mode == "quiet":
            return
        self.pause()
        self._rich(event)
        if self.status is not None and self._busy and not self._streamed:
            self.status.show()

    def _rich(self, event: ev.SessionEvent) -> None:
        from codeloop.agent import events as ev
        from codeloop.cli.status import WAITING, Usage, edit_preview

        if isinstance(event, ev.SessionStart):
            self.model = event.model
        elif isinstance(event, ev.UserInput):
            self.usage, self._busy = Usage(), True
            self._activity(WAITING)
        elif isinstance(event, ev.AssistantTextEnd):
            self.usage.add(event.input_tokens, event.cache_read_tokens, event.output_tokens)
            self._activity(WAITING)
        elif isinstance(event, ev.SessionEnd):
            self._busy = False
            if self.usage.calls:
                self.err.print(f"[dim]{escape(self.summary())}[/]", highlight=False)
                self.usage = Usage()
        if isinstance(event, ev.AssistantTextDelta):
            self.out.print(escape(event.delta), end="", highlight=False)
            self._streamed = True
        elif isinstance(event, ev.AssistantTextEnd):
            if self._streamed:
                self.out.print()
            self._streamed = False
        elif isinstance(event, ev.ToolCallStart):
            args = ", ".join(f"{k}={json.dumps(v)[:80]}" for k, v in event.arguments.items())
            self.out.print(f"[bold cyan]⏺ {escape(event.tool_name)}[/]({escape(args)})", highlight=False)
            for style, line in edit_preview(event.arguments):
                self.out.print(f"  [{style}]{escape(line)}[/]", highlight=False)
            self._activity(f"running {event.tool_name}")
        elif isinstance(event, ev.ToolCallEnd):
            text = event.error if event.is_error else event.output
            lines = (text or "").rstrip().splitlines()
            tail = "\n".join(lines[-6:])
            more = f"  … {len(lines) - 6} more lines above\n" if len(lines) > 6 else ""
            style = "red" if event.is_error else "dim"
            self.out.print(f"[{style}]{more}{escape(tail)}[/]", highlight=False)
            self._activity(WAITING)
        elif isinstance(event, ev.WarningEvent | ev.LoopDetection | ev.TurnLimit | ev.SteeringInjected):
            self.err.print(f"[yellow]{escape(_describe(event))}[/]")
        elif isinstance(event, ev.ErrorEvent):
            self._print_error(event)

    def _print_error(self, event: ev.ErrorEvent) -> None:
        self.err.print(f"[red]error:[/] {escape(event.message)}")
        hint = self.hints.get(event.error_type)
        if hint:
            self.err.print(f"  [yellow]fix:[/] {escape(hint)}")

    def _activity(self, text: str) -> None:
        if self.status is not None:
            self.status.activity = text


def _describe(event: ev.SessionEvent) -> str:
    from codeloop.agent import events as ev

    if isinstance(event, ev.TurnLimit):
        return f"stopped: limit reached (round {event.round}, turns {event.total_turns})"
    if isinstance(event, ev.SteeringInjected):
        return f"steering: {event.content}"
    return getattr(event, "message", event.kind.value)


@dataclass(frozen=True)
class RunSettings:
    """Everything a run needs once options and config files are merged."""

    choice: ModelChoice
    """Provider, profile and model."""
    root: Path
    """The workspace."""
    sandbox: str
    """Sandbox mode after the bubblewrap fallback."""
    network: bool
    """Network inside the sandbox."""
    approval: str
    """Approval mode."""
    max_turns: int
    """Turn limit (0 = none)."""
    mcp_servers: Any
    """``{name: McpServerConfig}`` from the config files."""
    constrained: str = "off"
    """Constrained decoding: auto, on or off (``SessionConfig.constrained_decoding``)."""


class Runner:
    """One workspace run: the Session, its recording and MCP servers. After an abort (which
    closes a Session) the chat goes on in a new Session resumed from the same log."""

    def __init__(self, settings: RunSettings, renderer: Renderer, err: Console, terminal: Terminal) -> None:
        self.settings, self.renderer, self.err, self.terminal = settings, renderer, err, terminal
        self.session: Any = None
        self.recording: Any = None
        self.client: Any = None
        self.environment: Any = None
        self.mcp: Any = None
        self.log_id: str | None = None

    async def start(self, resume: str | None) -> None:
        """Model, environment and the first Session (resuming ``resume`` when given)."""
        import asyncio

        choice = self.settings.choice
        if choice.local:
            self.err.print("No API key set: using the local llama.cpp model "
                           "(first use installs it; this can take a while).")
            choice = await asyncio.to_thread(start_local_model, choice)
            self.settings = dataclasses.replace(self.settings, choice=choice)
        self.client = build_client(choice)
        self.environment = build_environment(self.settings.root, self.settings.sandbox, self.settings.network)
        await self.environment.initialize()
        if self.settings.mcp_servers:
            from codeloop.mcp import McpServers

            self.mcp = McpServers(self.settings.mcp_servers, cwd=self.settings.root)
        await self.open(resume)

    async def open(self, resume: str | None) -> None:
        """A new Session, recorded (and resumed from ``resume``), with the MCP tools."""
        from codeloop.agent.config import SessionConfig
        from codeloop.agent.session import Session
        from codeloop.policy import ApprovalStore, approval_policy
        from codeloop.profiles import create_profile
        from codeloop.sessions import record_session

        s = self.settings
        store = ApprovalStore(s.root)
        if store.warning:
            self.err.print(f"[yellow]warning: {escape(store.warning)}[/]")
        policy = approval_policy(s.approval, store, self.terminal.ask,
                                 warn=lambda message: self.err.print(f"[yellow]warning: {escape(message)}[/]"))
        # Issue 10: OpenAI-compatible servers (local models) often write calls as text.
        profile = create_profile(s.choice.profile, s.choice.model)
        config = SessionConfig(max_turns=s.max_turns,
                               tool_call_recovery=True if s.choice.provider == "openai_compatible" else None,
                               constrained_decoding=s.constrained,
                               # A small window (compact prompt) gets no subagent tools: four more
                               # tools to describe, and a small model cannot delegate well.
                               max_subagent_depth=0 if profile.compact else SessionConfig.max_subagent_depth)
        session = Session(profile, self.environment, config, self.client, policy=policy)
        if resume is not None:
            session.id = resume  # events (--json, the log) carry the id --resume and rewind take
        self.recording = record_session(session, s.root, resume=resume,
                                        on_error=lambda e: self.err.print(f"[yellow]warning: session log: "
                                                                          f"{escape(str(e))}[/]"))
        self.log_id = self.recording.log_id
        session.subscribe(self.renderer)
        if self.mcp is not None:
            for problem in await self.mcp.register_tools(session.profile.tool_registry):
                self.err.print(f"[yellow]warning: {escape(problem)}[/]")
        self.session = session

    async def submit(self, text: str) -> str:
        """Run one input; reopens the conversation first when the last Session was closed."""
        from codeloop.agent.session import SessionState

        if self.session.state == SessionState.CLOSED:
            self.recording.close()
            await self.open(self.log_id)
        await self.session.submit(text)
        return str(self.session.end_reason)

    async def close(self) -> None:
        """Close the Session, the log, MCP servers and the client (each even if one fails)."""
        try:
            if self.session is not None:
                await self.session.close()
        finally:
            if self.recording is not None:
                self.recording.close()
            if self.mcp is not None:
                await self.mcp.close()
            close = getattr(self.client, "close", None)
            if close is not None:
                await close()
            if self.environment is not None:
                await self.environment.cleanup()


async def run_task(task: str, settings: RunSettings, resume: str | None, renderer: Renderer,
                   err: Console) -> tuple[str, str | None]:
    """Run one task to the end; returns (end reason, session log id). Lines typed on the
    terminal while the agent works steer it (``>>`` prefix: follow-up)."""
    terminal = Terminal(err)
    terminal.before_output = renderer.pause
    runner = Runner(settings, renderer, err, terminal)
    try:
        await runner.start(resume)
        if terminal.start():
            terminal.on_line = lambda line: route_typed_line(runner.session, line, err)
        reason = await runner.submit(task)
    finally:
        terminal.stop()
        await runner.close()
    return reason, runner.log_id


def route_typed_line(session: Any, line: str, err: Console) -> None:
    """A line typed while the agent works: ``>> text`` queues a follow-up, else it steers."""
    text = line.strip()
    if not text:
        return
    if text.startswith(">>"):
        session.follow_up(text[2:].strip())
        err.print(f"[dim]queued follow-up: {escape(text[2:].strip())}[/]")
    else:
        session.steer(text)
        err.print(f"[dim]steering: {escape(text)}[/]")


CHAT_HELP = ("Chat with the agent. Enter sends the message; end a line with \\ to continue it on the next "
             "line. While the agent works, Enter sends the line as steering and '>> text' queues a "
             "follow-up. Ctrl-C aborts the current turn; Ctrl-C twice (or Ctrl-D, or /exit) quits.")


async def read_message(terminal: Terminal, out: Console) -> str | None:
    """One message from the terminal: lines ending in ``\\`` continue; None at end of input."""
    parts: list[str] = []
    out.print("[bold green]›[/] ", end="")
    while True:
        line = await terminal.lines.get()
        if line is None:
            return None
        if line.endswith("\\"):
            parts.append(line[:-1])
            out.print("[dim]…[/] ", end="")
            continue
        parts.append(line)
        return "\n".join(parts)


async def run_chat(settings: RunSettings, resume: str | None, renderer: Renderer,
                   err: Console) -> tuple[str, str | None]:
    """The interactive chat of ``codeloop run`` without a TASK (see CHAT_HELP)."""
    import asyncio
    import signal
    import time

    terminal = Terminal(err)
    terminal.before_output = renderer.pause
    runner = Runner(settings, renderer, err, terminal)
    loop = asyncio.get_running_loop()
    turn: asyncio.Task[str] | None = None
    last_press = [0.0]
    quitting = [False]
    aborts: list[asyncio.Task[None]] = []

    def on_sigint() -> None:
        renderer.pause()
        now = time.monotonic()
        again = now - last_press[0] < 2.0
        last_press[0] = now
        if again:
            quitting[0] = True
            if turn is not None and not turn.done():
                turn.cancel()
            terminal.lines.put_nowait(None)
        elif turn is not None and not turn.done():
            err.print("\n[yellow]aborting the turn (Ctrl-C again to quit)[/]")
            aborts.append(loop.create_task(runner.session.abort()))
        else:
            err.print("\n[dim](Ctrl-C again to quit)[/]")

    reason = "closed"
    try:
        if not terminal.start(pipes=True):
            raise UsageError("no input: run codeloop run without a TASK in a terminal, or pass a TASK")
        await runner.start(resume)
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        err.print(f"[dim]{escape(CHAT_HELP)}[/]")
        while not quitting[0]:
            text = await read_message(terminal, renderer.out)
            if text is None or text.strip() in ("/exit", "/quit"):
                break
            if not text.strip():
                continue
            last_press[0] = 0.0  # a Ctrl-C before this message does not make the next one a "twice"
            if terminal.interactive:
                terminal.on_line = lambda line: route_typed_line(runner.session, line, err)
            turn = loop.create_task(runner.submit(text))
            try:
                reason = await turn
            except asyncio.CancelledError:
                reason = "aborted"
            finally:
                terminal.on_line = None
            renderer.out.print()
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        terminal.stop()
        await runner.close()
    return ("closed" if reason in ("completed", "aborted") else reason), runner.log_id


def settle_options(root: Path, flags: dict[str, Any], network: str | None, err: Console,
                   constrained: str | None = None) -> RunSettings:
    """Merge flags > project config > user config > defaults; raises UsageError."""
    from codeloop.config import ConfigError, load_config
    from codeloop.policy import APPROVAL_MODES

    try:
        cfg = load_config(root)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    for warning in cfg.warnings:
        err.print(f"[yellow]warning: {escape(warning)}[/]")
    merged = {k: v if v is not None else getattr(cfg, k) for k, v in flags.items()}
    sandbox = merged["sandbox"] or "workspace-write"
    approval = merged["approval"] or "on-risk"
    if sandbox not in SANDBOX_MODES:
        raise UsageError(f"unknown --sandbox {sandbox!r}: use one of {', '.join(SANDBOX_MODES)}")
    if approval not in APPROVAL_MODES:
        raise UsageError(f"unknown --approval {approval!r}: use one of {', '.join(APPROVAL_MODES)}")
    if network not in (None, "on", "off"):
        raise UsageError(f"unknown --network {network!r}: use on or off")
    if constrained not in (None, "auto", "on", "off"):
        raise UsageError(f"unknown --constrained {constrained!r}: use auto, on or off")
    choice = choose_model(merged["provider"], merged["profile"], merged["model"], merged["base_url"],
                          dict(os.environ))
    sandbox = resolve_sandbox(sandbox, merged["sandbox"] is not None, err)
    return RunSettings(choice, root, sandbox, network == "on", approval, merged["max_turns"] or 0,
                       dict(cfg.mcp_servers), constrained=constrained or "off")


def resume_target(root: Path, resume: str | None, continue_: bool) -> str | None:
    """The session id to resume (``--resume ID`` or ``--continue``); raises UsageError."""
    if resume and continue_:
        raise UsageError("--resume and --continue exclude each other: pass one")
    if not continue_:
        return resume
    from codeloop.sessions import latest_session

    latest = latest_session(root)
    if latest is None:
        raise UsageError(f"--continue: no earlier session in {root}: start one with codeloop run \"TASK\"")
    return str(latest.id)


def register(app: typer.Typer) -> None:
    """Add ``codeloop run``."""

    @app.command("run")
    def run(
        task: str | None = typer.Argument(None, help="What the agent should do (none: start a chat)."),
        cwd: Path = typer.Option(Path("."), "--cwd", help="Workspace directory (default: current directory)."),
        json_out: bool = typer.Option(False, "--json", help="One JSON event per line on stdout."),
        quiet: bool = typer.Option(False, "--quiet", help="Print only the final answer."),
        model: str | None = typer.Option(None, "--model", help="Model id (default: the profile's)."),
        provider: str | None = typer.Option(None, "--provider",
                                            help="openai, anthropic, gemini or openai_compatible."),
        profile: str | None = typer.Option(None, "--profile", help="openai, anthropic, gemini or text."),
        base_url: str | None = typer.Option(None, "--base-url", help="API root, e.g. http://127.0.0.1:8080/v1."),
        max_turns: int | None = typer.Option(None, "--max-turns", min=0,
                                             help="Stop after this many turns (0 = no limit)."),
        sandbox: str | None = typer.Option(None, "--sandbox",
                                           help="read-only, workspace-write (default) or full."),
        network: str | None = typer.Option(None, "--network", help="on or off (default) inside the sandbox."),
        approval: str | None = typer.Option(None, "--approval", help="never-ask, on-risk (default) or always-ask."),
        resume: str | None = typer.Option(None, "--resume", help="Continue the session with this id."),
        continue_: bool = typer.Option(False, "--continue", help="Continue the latest session of this workspace."),
        constrained: str | None = typer.Option(
            None, "--constrained",
            help="auto, on or off (default): every reply must be one JSON tool call or a final answer "
                 "(servers with JSON Schema support, e.g. llama.cpp)."),
    ) -> None:
        """Run the coding agent on TASK in a workspace, or chat with it when TASK is left out.

        Options left out come from .codeloop/config.toml, then ~/.config/codeloop/config.toml.

        Example: codeloop run "add a --verbose flag to cli.py" --cwd ~/src/app
        """
        import asyncio

        from rich.console import Console

        err = Console(stderr=True, soft_wrap=True)
        mode = "json" if json_out else "quiet" if quiet else "rich"
        try:
            root = cwd.expanduser().resolve()
            if not root.is_dir():
                raise UsageError(f"--cwd {str(cwd)!r} is not a directory: create it or pass an existing one")
            flags = {"model": model, "provider": provider, "profile": profile, "base_url": base_url,
                     "sandbox": sandbox, "approval": approval, "max_turns": max_turns}
            settings = settle_options(root, flags, network, err, constrained)
            resume_id = resume_target(root, resume, continue_)
            if task is None and mode == "json":
                raise UsageError("--json needs a TASK: codeloop run \"TASK\" --json")
        except UsageError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(2) from None
        renderer = Renderer(mode, Console(highlight=False, soft_wrap=True), err)
        renderer.hints = fix_hints(settings.choice)
        log_id: str | None = None
        try:
            if task is None:
                reason, log_id = asyncio.run(run_chat(settings, resume_id, renderer, err))
            else:
                reason, log_id = asyncio.run(run_task(task, settings, resume_id, renderer, err))
        except KeyboardInterrupt:
            err.print("[yellow]interrupted[/]")
            raise typer.Exit(130) from None
        except UsageError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(2) from None
        except Exception as exc:  # configuration problems found late (adapter, sandbox, session id, MCP)
            err.print(f"[red]error:[/] {escape(type(exc).__name__)}: {escape(str(exc))}")
            raise typer.Exit(2) from None
        if mode == "quiet" and renderer.final_text:
            typer.echo(renderer.final_text)
        if log_id and mode != "quiet":
            err.print(f"session {log_id}  (continue: codeloop run --resume {log_id}; "
                      f"undo: codeloop rewind {log_id} --to TURN)", highlight=False)
        raise typer.Exit(EXIT_CODES.get(reason, 1))
