"""``codeloop run "TASK"``: run the agent loop in a workspace (DESIGN contract, issue 9 basics).

Model choice, in order: ``--provider``/``--base-url`` when given; else the first API key
set (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``/``GOOGLE_API_KEY``);
else the local llama.cpp model (installed and started on first use) with the ``text``
profile. Output: rich text as it happens; ``--json`` one event per line on stdout
(schema ``docs/events.schema.json``); ``--quiet`` only the final answer.

Exit codes: 0 completed, 1 the session failed (provider/auth error), 2 bad usage or
configuration, 3 a turn or round limit stopped the agent, 130 interrupted.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from codeloop.agent import events as ev

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
APPROVAL_MODES = ("never-ask", "on-risk", "always-ask")
LOCAL_MODEL = "1.5b"
"""Local model used without an API key (``0.5b`` is faster but rarely finishes a task)."""
READ_ONLY_TOOLS = frozenset({"read_file", "read_many_files", "grep", "glob", "list_dir", "wait"})


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
        adapter = OpenAICompatibleAdapter(choice.base_url or "http://127.0.0.1:8080/v1", api_key=choice.api_key,
                                          timeout=timeout)
    return Client({choice.provider: adapter})


def build_environment(cwd: Path, sandbox: str) -> Any:
    """The workspace environment: local for ``full``, bubblewrap for the other modes when
    the sandbox module is available."""
    from codeloop.environments.local import LocalExecutionEnvironment

    if sandbox == "full":
        return LocalExecutionEnvironment(str(cwd))
    try:
        from codeloop.environments.sandbox import SandboxedExecutionEnvironment
    except ImportError:
        return LocalExecutionEnvironment(str(cwd))
    return SandboxedExecutionEnvironment(str(cwd), mode=sandbox)  # type: ignore[arg-type]


def build_policy(approval: str) -> Any:
    """The tool policy of an approval mode (None for ``never-ask``)."""
    if approval == "never-ask":
        return None
    from codeloop.policy import evaluate_command, preset
    from codeloop.tools import PolicyDecision

    standard = preset("standard")

    async def policy(call: Any, env: Any) -> Any:
        if call.name in READ_ONLY_TOOLS:
            return PolicyDecision.allow()
        if approval == "always-ask":
            return PolicyDecision.ask(f"{call.name} changes the workspace or runs code")
        if call.name == "shell":
            decision = evaluate_command(str(call.arguments.get("command", "")), standard.shell, standard.network)
            if decision.action == "allow":
                return PolicyDecision.allow()
            return PolicyDecision.deny(decision.reason) if decision.action == "deny" else PolicyDecision.ask(decision.reason)
        return PolicyDecision.allow()

    return policy


def build_approver(console: Console) -> Any:
    """Ask on the terminal (y/N); None when stdin is not a terminal (calls that need
    approval are then refused with a message naming ``--approval never-ask``)."""
    if not sys.stdin.isatty():
        return None

    async def approver(call: Any, reason: str) -> bool:
        args = json.dumps(call.arguments)[:300]
        console.print(f"[yellow]Approve[/] {escape(call.name)} {escape(args)}? ({escape(reason)}) [y/N] ", end="")
        answer = await asyncio.to_thread(sys.stdin.readline)
        return answer.strip().lower() in ("y", "yes")

    return approver


class Renderer:
    """Turns events into terminal output: rich (default), JSON lines or quiet."""

    def __init__(self, mode: str, out: Console, err: Console) -> None:
        self.mode, self.out, self.err = mode, out, err
        self.final_text = ""
        self._streamed = False

    def __call__(self, event: ev.SessionEvent) -> None:
        if self.mode == "json":
            sys.stdout.write(json.dumps(ev.event_to_json(event), default=str) + "\n")
            sys.stdout.flush()
            if isinstance(event, ev.ErrorEvent):
                self.err.print(f"[red]error:[/] {escape(event.message)}")
            return
        if isinstance(event, ev.AssistantTextEnd):
            self.final_text = event.text
        if self.mode == "quiet":
            return
        self._rich(event)

    def _rich(self, event: ev.SessionEvent) -> None:
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
        elif isinstance(event, ev.ToolCallEnd):
            text = event.error if event.is_error else event.output
            lines = (text or "").rstrip().splitlines()
            tail = "\n".join(lines[-6:])
            more = f"  … {len(lines) - 6} more lines above\n" if len(lines) > 6 else ""
            style = "red" if event.is_error else "dim"
            self.out.print(f"[{style}]{more}{escape(tail)}[/]", highlight=False)
        elif isinstance(event, ev.WarningEvent | ev.LoopDetection | ev.TurnLimit | ev.SteeringInjected):
            self.err.print(f"[yellow]{escape(_describe(event))}[/]")
        elif isinstance(event, ev.ErrorEvent):
            self.err.print(f"[red]error:[/] {escape(event.message)}")


def _describe(event: ev.SessionEvent) -> str:
    if isinstance(event, ev.TurnLimit):
        return f"stopped: limit reached (round {event.round}, turns {event.total_turns})"
    if isinstance(event, ev.SteeringInjected):
        return f"steering: {event.content}"
    return getattr(event, "message", event.kind.value)


async def run_task(task: str, choice: ModelChoice, cwd: Path, *, sandbox: str, approval: str,
                   max_turns: int, renderer: Renderer, err: Console) -> str:
    """Run one task to the end; returns the session's end reason."""
    from codeloop.agent.config import SessionConfig
    from codeloop.agent.session import Session
    from codeloop.profiles import create_profile

    if choice.local:
        from codeloop.llm.local import ensure_local_server

        err.print("No API key set: using the local llama.cpp model (first use installs it; this can take a while).")
        local_model = choice.model or LOCAL_MODEL
        base_url = await asyncio.to_thread(ensure_local_server, local_model)
        choice = ModelChoice(choice.provider, choice.profile, local_model, base_url, None, True)
    profile = create_profile(choice.profile, choice.model)
    client = build_client(choice)
    environment = build_environment(cwd, sandbox)
    await environment.initialize()
    # Issue 10: OpenAI-compatible servers (local models) often write calls as text.
    config = SessionConfig(max_turns=max_turns,
                           tool_call_recovery=True if choice.provider == "openai_compatible" else None)
    session = Session(profile, environment, config, client, policy=build_policy(approval),
                      approver=build_approver(err))
    session.subscribe(renderer)
    try:
        await session.submit(task)
        reason = session.end_reason
        await session.close()
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            await close()
    return reason


def register(app: typer.Typer) -> None:
    """Add ``codeloop run``."""

    @app.command("run")
    def run(
        task: str = typer.Argument(..., help="What the agent should do."),
        cwd: Path = typer.Option(Path("."), "--cwd", help="Workspace directory (default: current directory)."),
        json_out: bool = typer.Option(False, "--json", help="One JSON event per line on stdout."),
        quiet: bool = typer.Option(False, "--quiet", help="Print only the final answer."),
        model: str | None = typer.Option(None, "--model", help="Model id (default: the profile's)."),
        provider: str | None = typer.Option(None, "--provider",
                                            help="openai, anthropic, gemini or openai_compatible."),
        profile: str | None = typer.Option(None, "--profile", help="openai, anthropic, gemini or text."),
        base_url: str | None = typer.Option(None, "--base-url", help="API root, e.g. http://127.0.0.1:8080/v1."),
        max_turns: int = typer.Option(0, "--max-turns", min=0, help="Stop after this many turns (0 = no limit)."),
        sandbox: str = typer.Option("workspace-write", "--sandbox", help="read-only, workspace-write or full."),
        approval: str = typer.Option("on-risk", "--approval", help="never-ask, on-risk or always-ask."),
    ) -> None:
        """Run the coding agent on TASK in a workspace.

        Example: codeloop run "add a --verbose flag to cli.py" --cwd ~/src/app
        """
        err = Console(stderr=True, soft_wrap=True)
        try:
            if sandbox not in SANDBOX_MODES:
                raise UsageError(f"unknown --sandbox {sandbox!r}: use one of {', '.join(SANDBOX_MODES)}")
            if approval not in APPROVAL_MODES:
                raise UsageError(f"unknown --approval {approval!r}: use one of {', '.join(APPROVAL_MODES)}")
            root = cwd.expanduser().resolve()
            if not root.is_dir():
                raise UsageError(f"--cwd {str(cwd)!r} is not a directory: create it or pass an existing one")
            choice = choose_model(provider, profile, model, base_url, dict(os.environ))
        except UsageError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(2) from None
        mode = "json" if json_out else "quiet" if quiet else "rich"
        renderer = Renderer(mode, Console(highlight=False, soft_wrap=True), err)
        try:
            reason = asyncio.run(run_task(task, choice, root, sandbox=sandbox, approval=approval,
                                          max_turns=max_turns, renderer=renderer, err=err))
        except KeyboardInterrupt:
            err.print("[yellow]interrupted[/]")
            raise typer.Exit(130) from None
        except Exception as exc:  # configuration problems found late (adapter, sandbox, local model)
            err.print(f"[red]error:[/] {escape(type(exc).__name__)}: {escape(str(exc))}")
            raise typer.Exit(2) from None
        if mode == "quiet" and renderer.final_text:
            typer.echo(renderer.final_text)
        raise typer.Exit(EXIT_CODES.get(reason, 1))
