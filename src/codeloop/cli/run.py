"""``codeloop run ["TASK"]``: run the agent loop in a workspace (DESIGN contract, issue 9).

Options -> settings -> Session -> loop. The model comes from ``cli/model_choice.py``
(flags, API keys, else the local llama.cpp model), the terminal and the event rendering
from ``cli/run_terminal.py``, the environment from ``codeloop.tools.call_path`` (the factory's).
Options left out come from the config files (``codeloop.config``: project, then user).
Output: rich text as it happens; ``--json`` one event per line on stdout (schema
``docs/events.schema.json``); ``--quiet`` only the final answer. Every run is recorded
(``codeloop.sessions``; ``--resume ID``/``--continue``); MCP servers come from the config.
Without TASK: a chat on the terminal (``cli/chat.py``; keys in docs/agent.md).

Exit codes (stable; docs/cli.md "Exit codes"): 0 completed, 1 the session failed
(provider/auth/model error), 2 bad usage or configuration, 3 a turn or round limit (or a loop
ignored after two warnings) stopped the agent, 4 completed but a call needing approval was not run because no terminal could
answer, 130 interrupted. Calls needing approval wait in the pending store (issue 34):
``--approval-from terminal`` asks on the terminal, ``store`` waits for ``codeloop approvals``. Plan mode (``--plan``, ``/plan``, ``/go``) and
``--output-last-message``: ``cli/plan.py``; the chat: ``cli/chat.py``. Custom commands
(``/NAME args``) and ``@path``: ``cli/commands.py``; images (``--image``, ``@shot.png``):
``cli/images.py``; worktrees: ``cli/worktrees.py``. Over 500 lines: the Runner wires one
Session (policy, hooks, jobs, log) from the settings the command builds; apart, each half
would pass all of them across.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from codeloop.cli.chat import run_chat
from codeloop.cli.commands import CommandError, Prompt, command_call, prepare
from codeloop.cli.images import ImageError, option_images
from codeloop.cli.model_choice import (
    LocalModelClient,
    ModelChoice,
    UsageError,
    build_client,
    choose_model,
    fix_hints,
    served_model,
    start_local_model,
)
from codeloop.cli.plan import (
    PLAN_INSTRUCTIONS,
    OutputPathError,
    check_output_path,
    one_shot_hint,
    write_last_message,
)
from codeloop.cli.run_terminal import Renderer, Terminal, escape, route_typed_line
from codeloop.cli.worktrees import start_worktree

if TYPE_CHECKING:  # rich and the agent load inside the command: `codeloop --help` stays fast
    from rich.console import Console

    from codeloop.tools.call_path import SandboxMode

DEFAULT_RETRIES = 6
"""``--max-retries`` default (``SessionConfig.max_retries``; the agent package loads lazily)."""
EXIT_CODES = {"completed": 0, "error": 1, "round_limit": 3, "turn_limit": 3, "loop_limit": 3, "budget": 3,
              "aborted": 130, "closed": 0}
"""Exit code by how the session ended."""
EXIT_USAGE = 2
"""Bad options, configuration or workspace."""
EXIT_NOT_APPROVED = 4
"""The session completed, but a call that needed approval was denied: no terminal could answer."""


@dataclass(frozen=True)
class RunSettings:
    """Everything a run needs once options and config files are merged."""

    choice: ModelChoice
    root: Path
    """The workspace."""
    sandbox: SandboxMode
    """Sandbox mode after the bubblewrap fallback."""
    network: bool
    """Network for commands (off holds in every mode)."""
    approval: str
    max_turns: int
    """Turn limit (0 = none)."""
    mcp_servers: Any
    """``{name: McpServerConfig}`` from the config files."""
    constrained: str = "off"
    """Constrained decoding: auto, on or off (``SessionConfig.constrained_decoding``)."""
    max_retries: int = DEFAULT_RETRIES
    """Retries of one model call after a transient failure (``SessionConfig.max_retries``)."""
    plan: bool = False
    """Start in plan mode (``--plan``, ``mode = "plan"``)."""
    hooks: tuple[Any, ...] = ()
    """``[[hooks]]`` of the config files (``codeloop.tools.hooks.Hook``; project ones only when trusted)."""
    diagnostics: bool = True
    """Diagnostics after edits (``--diagnostics/--no-diagnostics``, ``diagnostics =``)."""
    diagnostic_commands: tuple[Any, ...] = ()
    """``diagnostics = [...]`` commands (``codeloop.tools.diagnostics.DiagnosticCommand``; project ones when trusted)."""
    rescues: bool | None = None
    """The small-model rescues (``--rescues/--no-rescues``, ``rescues =``; None: by the window)."""
    strategy: bool | None = None
    """The small-model strategy (``--strategy/--no-strategy``, ``strategy =``; None: on for the
    local llama.cpp model, embedded or ``--model-file``)."""
    candidates: int | None = None
    """Drafts of the strategy's step when the greedy one fails (``--candidates``, ``candidates =``;
    None: ``SessionConfig.small_model_samples`` + 1)."""
    max_cost: float | None = None
    """``--max-cost`` USD at list price (issue 36; None: no limit)."""
    max_tokens: int | None = None
    """``--max-tokens``: input + output tokens of every model call (None: no limit)."""
    max_time: float | None = None
    """``--max-time`` in seconds (None: no limit)."""
    approval_from: str = "terminal"
    """Who answers an ask (issue 34): ``terminal`` (the prompt, and the store too) or ``store``
    (only ``codeloop approvals`` and other clients of the pending store)."""
    snapshots: Any = None
    """``[snapshots]`` of the config files (issue 35; ``record_session``'s ``snapshot_options``)."""

    @property
    def budgeted(self) -> bool:
        """True when a limit of issue 36 is set (``max_turns`` included)."""
        return self.max_turns > 0 or any(v is not None for v in (self.max_cost, self.max_tokens, self.max_time))


class Runner:
    """One workspace run: the Session, its recording and MCP servers. After an abort (which
    closes a Session) the chat goes on in a new Session resumed from the same log."""

    def __init__(self, settings: RunSettings, renderer: Renderer, err: Console, *, ask_client: Any = None) -> None:
        self.settings, self.renderer, self.err = settings, renderer, err
        self.ask_client = ask_client
        """Answers each ask instead of the terminal (``codeloop acp``: the editor's permission
        request); None: the terminal, as ``approval_from`` says."""
        self.wrap_environment: Any = None
        """Wraps the workspace's environment once opened (``codeloop acp``: file changes shown as
        diffs, reads of the editor's unsaved buffers); None: used as opened."""
        self.terminal = Terminal(err)
        self.terminal.before_output = renderer.pause
        renderer.pending_lines = settings.approval_from == "store"  # else the terminal's question says it
        self.session: Any = None
        self.recording: Any = None
        self.client: Any = None
        self.environment: Any = None
        self.mcp: Any = None
        self.log_id: str | None = None
        self.log_error: Exception | None = None
        """Why the session log could not be written (the run then stops and fails)."""
        self.stopping: Any = None
        self.plan = settings.plan
        """Plan mode: the next Session opens read-only (:meth:`set_plan` switches)."""
        self.plan_environment: Any = None
        """The read-only sandbox of plan mode, opened on first use."""
        self.plan_shell: bool | None = None
        """bubblewrap runs here: plan mode's shell is sandboxed read-only (else refused); None
        until plan mode is first used (the probe costs a process start)."""
        self.command: Any = None
        """The custom command of the input running now: its allowed-tools hold (POLICY step)."""
        self.budget: Any = None
        """The run's ``codeloop.agent.budget.Budget`` (one for every Session of a chat), None without limits."""
        from codeloop.policy.pending import SqlitePendingStore
        from codeloop.sessions.state_dir import approvals_db_path

        self.pending = SqlitePendingStore(approvals_db_path())
        """Where every ask of the run waits for an answer (``codeloop approvals`` reads it too)."""

    async def start(self, resume: str | None) -> None:
        """Model, environment and the first Session (resuming ``resume`` when given)."""
        import asyncio

        from codeloop.tools.call_path import open_environment

        choice = self.settings.choice
        served = None
        if choice.local:
            if choice.model_file is None:
                self.err.print("No API key set: using the local llama.cpp model "
                               "(first use installs it; this can take a while).")
            else:
                self.err.print(f"Serving {escape(choice.model_file)} with the local llama-server.")
            served = served_model(choice)
            choice = await asyncio.to_thread(start_local_model, choice)
            self.settings = dataclasses.replace(self.settings, choice=choice)
        self.client = build_client(choice)
        if served is not None and choice.base_url:
            self.client = LocalModelClient(self.client, served, choice.base_url,
                                           lambda text: self.err.print(f"[yellow]warning: {escape(text)}[/]"))
        self.environment = open_environment(self.settings.root, sandbox=self.settings.sandbox,
                                            network=self.settings.network)
        if self.wrap_environment is not None:
            self.environment = self.wrap_environment(self.environment)
        await self.environment.initialize()
        if self.settings.mcp_servers:
            from codeloop.mcp import McpServers

            self.mcp = McpServers(self.settings.mcp_servers, cwd=self.settings.root)
        await self.open(resume)

    async def open(self, resume: str | None) -> None:
        """A new Session, recorded (and resumed from ``resume``), with the MCP tools."""
        import asyncio

        from codeloop.agent.config import SessionConfig
        from codeloop.agent.events import SessionEnd
        from codeloop.agent.session import Session
        from codeloop.policy import ApprovalStore, approval_policy, remembering
        from codeloop.policy.model import Decision
        from codeloop.policy.plan_mode import plan_mode_policy
        from codeloop.profiles import create_profile
        from codeloop.sessions import record_session
        from codeloop.tools.call_path import open_environment
        from codeloop.tools.jobs import JobTable, add_job_tools

        s = self.settings
        remembered = ApprovalStore(s.root)
        if remembered.warning:
            self.err.print(f"[yellow]warning: {escape(remembered.warning)}[/]")
        approve = approval_policy(s.approval, remembered)
        environment = self.environment
        if self.plan:
            approve = plan_mode_policy(approve, shell_sandboxed=await self.check_plan_shell())
            if self.plan_shell:
                if self.plan_environment is None:
                    self.plan_environment = open_environment(s.root, sandbox="read-only", network=s.network)
                    await self.plan_environment.initialize()
                environment = self.plan_environment

        async def policy(call: Any, env: Any) -> Decision:
            # Checked before each tool runs, so a call the log could not record never runs,
            # even before the abort below takes effect.
            if self.log_error is not None:
                return Decision("deny", "the session log cannot be written, so nothing more runs")
            allowed = self.command.allowed_tools if self.command is not None else None
            if allowed is not None and call.name not in allowed:
                return Decision.deny(f"the command /{self.command.name} allows only {', '.join(allowed)}, "
                                     f"so {call.name} was not run; do the task with those tools",
                                     rule="allowed-tools")
            return await approve(call, env)

        # Issue 10: OpenAI-compatible servers (local models) often write calls as text.
        profile = create_profile(s.choice.profile, s.choice.model)
        config = SessionConfig(max_turns=s.max_turns, max_retries=s.max_retries,
                               tool_call_recovery=True if s.choice.provider == "openai_compatible" else None,
                               constrained_decoding=s.constrained,
                               # A small window (compact prompt) gets no subagent tools: four more
                               # tools to describe, and a small model cannot delegate well.
                               max_subagent_depth=0 if profile.compact else SessionConfig.max_subagent_depth,
                               user_instructions=PLAN_INSTRUCTIONS if self.plan else "",
                               diagnostics=s.diagnostics, diagnostic_commands=s.diagnostic_commands,
                               small_model_rescues=s.rescues,
                               # Issue 33: the local model drafts, checks and chooses (compact profiles only).
                               small_model_strategy=s.choice.local if s.strategy is None else s.strategy,
                               small_model_samples=SessionConfig.small_model_samples if s.candidates is None
                               else s.candidates - 1)
        from codeloop.tools.call_path import Approvals
        from codeloop.tools.hooks import Hooks

        # Every ask (the approval mode's, a hook's) waits in the pending store; the terminal
        # prompt is one client of it (--approval-from terminal), never the only way to answer.
        approvals = Approvals(self.pending, face="run", wait=True,
                              client=self.ask_client or (
                                  self.terminal.client() if s.approval_from == "terminal" else None),
                              remember=remembering(remembered, lambda message: self.err.print(
                                  f"[yellow]warning: {escape(message)}[/]")))
        if s.budgeted and self.budget is None:
            from codeloop.agent.budget import Budget, BudgetLimits

            self.budget = Budget(BudgetLimits(s.max_cost, s.max_tokens, s.max_time))
        session = Session(profile, environment, config, self.client, policy=policy, approvals=approvals,
                          hooks=Hooks(s.hooks, s.root), budget=self.budget)
        if resume is not None:
            session.id = resume  # events (--json, the log) carry the id --resume and rewind take
            self.settle_earlier_asks(resume)
        def log_failed(exc: Exception) -> None:
            # Going on unrecorded would let a resume run again what the log cannot tell.
            self.log_error = exc
            self.err.print(f"[bold red]error:[/] [red]session log: {escape(str(exc))}; the session stops "
                           "here so that nothing runs unrecorded[/]")
            self.stopping = asyncio.get_running_loop().create_task(session.abort())

        self.recording = record_session(
            session, s.root, resume=resume, on_error=log_failed, snapshot_options=s.snapshots,
            on_checkpoint_error=lambda message: self.err.print(f"[yellow]warning: checkpoint: {escape(message)}[/]"))
        self.log_id = self.recording.log_id
        session.subscribe(self.renderer)
        jobs = JobTable()
        add_job_tools(session.profile.tool_registry, jobs)
        # A job never outlives its session: closed, aborted or reopened in plan mode.
        # (SessionEnd also ends each input, with the session idle: jobs go on between inputs.)
        session.subscribe(lambda event: jobs.kill_all()
                          if isinstance(event, SessionEnd) and event.state == "closed" else None)
        if self.mcp is not None:
            for problem in await self.mcp.register_tools(session.profile.tool_registry):
                self.err.print(f"[yellow]warning: {escape(problem)}[/]")
        self.session = session

    def settle_earlier_asks(self, session_id: str) -> None:
        """What an earlier process of this session left in the pending store (it was killed):
        waiting calls are withdrawn (nobody waits for them), and calls approved or running when
        it died are reported interrupted and never run (the conversation went on without them:
        the model may ask again)."""
        store = self.pending
        left = store.withdraw(session_id, "the process that asked ended before an answer")
        left += store.interrupt(session_id)
        for entry in store.list(session_id, "approved"):
            if store.claim(entry.id):  # claimed here so that no other owner runs it either
                store.finish(entry.id, "interrupted")
                left.append(store.get(entry.id))
        for entry in left:
            self.err.print(f"[yellow]warning: pending call {entry.id} ({escape(entry.summary(120))}) of the earlier "
                           f"run was {entry.status}; it is not run[/]", highlight=False)

    async def set_plan(self, plan: bool) -> None:
        """Enter or leave plan mode: the Session closes and the next input reopens the same
        conversation with the mode's policy, environment and prompt (:meth:`submit`)."""
        from codeloop.agent.session import SessionState

        self.plan = plan
        if self.session is not None and self.session.state != SessionState.CLOSED:
            await self.session.close()

    async def check_plan_shell(self) -> bool:
        """Whether plan mode can sandbox shell read-only here (probed once; a warning if not)."""
        import asyncio

        from codeloop.tools.call_path import probe_bwrap

        if self.plan_shell is None:
            why = await asyncio.to_thread(probe_bwrap)
            self.plan_shell = why is None
            if why is not None:
                self.err.print(f"[yellow]warning: plan mode without a read-only sandbox ({escape(why)}): "
                               "shell is refused in plan mode[/]")
        return self.plan_shell

    async def submit(self, prompt: Prompt | None) -> str:
        """Run one input (None: go on with the last one, which a limit paused); reopens the
        conversation first when the last Session was closed. CommandError when its command
        allows a tool that does not exist."""
        from codeloop.agent.session import SessionState

        if self.session.state == SessionState.CLOSED:
            self.recording.close()
            await self.open(self.log_id)
        if prompt is None:
            await self.session.go_on()
            return "error" if self.log_error is not None else str(self.session.end_reason)
        command = prompt.command
        if command is not None and command.allowed_tools is not None:
            unknown = set(command.allowed_tools) - set(self.session.profile.tool_registry.names())
            if unknown:
                raise CommandError(f"{command.path}: allowed-tools names {', '.join(sorted(unknown))}, which "
                                   f"is no tool here; tools: {', '.join(self.session.profile.tool_registry.names())}")
        self.command = command
        try:
            await self.session.submit(prompt.text, prompt.images)
        finally:
            self.command = None
        if self.stopping is not None:
            await self.stopping
        return "error" if self.log_error is not None else str(self.session.end_reason)

    async def take_back(self, redo: bool) -> Any:
        """``/undo`` (the last turn that changed files) or ``/redo`` (the last undo) of the chat:
        the conversation goes on from the log as it is afterwards (a new Session resumed from
        it). RewindRefusedError when it cannot be done (nothing changed)."""
        import asyncio

        from codeloop.agent.session import SessionState
        from codeloop.sessions import redo as redo_
        from codeloop.sessions import undo

        self.recording.close()  # the log is rewritten: the closing session writes nothing to it
        if self.session.state != SessionState.CLOSED:
            await self.session.close()
        try:
            return await asyncio.to_thread(redo_ if redo else undo, str(self.log_id), self.settings.root)
        finally:
            await self.open(self.log_id)

    async def close(self) -> None:
        """Close the Session, the log, MCP servers and the client (each even if one fails)."""
        try:
            if self.session is not None:
                await self.session.close()  # withdraws what still waits for an answer
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
            if self.plan_environment is not None:
                await self.plan_environment.cleanup()


async def run_task(task: Prompt | None, settings: RunSettings, resume: str | None, renderer: Renderer,
                   err: Console, *, ask_client: Any = None, steer: bool = True) -> tuple[str, str | None, int]:
    """Run one task to the end; returns (end reason, session log id, calls denied because no
    terminal could approve them). Lines typed on the terminal while the agent works steer it
    (``>>`` prefix: follow-up). ``task`` None goes on with the resumed session's input (paused
    by a limit, or cut off). ``codeloop batch`` passes ``steer=False`` (its workers share the
    terminal, none reads it) and its own ``ask_client`` (:class:`Runner`)."""
    runner = Runner(settings, renderer, err, ask_client=ask_client)
    terminal = runner.terminal
    try:
        await runner.start(resume)
        if steer and terminal.start():
            terminal.on_line = lambda line: route_typed_line(runner.session, line, err)
        reason = await runner.submit(task)
    finally:
        terminal.stop()
        await runner.close()
    return reason, runner.log_id, terminal.unanswered


def settle_options(root: Path, flags: dict[str, Any], network: str | None, err: Console,
                   constrained: str | None = None, plan: bool | None = None) -> RunSettings:
    """Merge flags > project config > user config > defaults; raises UsageError."""
    from codeloop.config import ConfigError, load_config
    from codeloop.environments.errors import SandboxUnavailableError
    from codeloop.policy import APPROVAL_MODES
    from codeloop.tools.call_path import SandboxOptionError, check_sandbox_options, settle_sandbox

    try:
        cfg = load_config(root)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    for warning in cfg.warnings:
        err.print(f"[yellow]warning: {escape(warning)}[/]")
    merged = {k: v if v is not None else getattr(cfg, k) for k, v in flags.items()}
    approval = merged["approval"] or "on-risk"
    try:
        check_sandbox_options(merged["sandbox"] or "workspace-write", network)
    except SandboxOptionError as exc:
        raise UsageError(str(exc)) from None
    if approval not in APPROVAL_MODES:
        raise UsageError(f"unknown --approval {approval!r}: use one of {', '.join(APPROVAL_MODES)}")
    if constrained not in (None, "auto", "on", "off"):
        raise UsageError(f"unknown --constrained {constrained!r}: use auto, on or off")
    model_file = merged.get("model_file")
    if flags.get("model_file") is None and (flags.get("base_url") or flags.get("provider")):
        model_file = None  # a server named on the command line wins over a config file's model_file
    choice = choose_model(merged["provider"], merged["profile"], merged["model"], merged["base_url"],
                          dict(os.environ), model_file, merged.get("gpu_layers"))
    if flags.get("gpu_layers") is not None and not choice.local:
        raise UsageError("--gpu-layers applies to the local llama-server only (--model-file or no API key), "
                         f"not to provider {choice.provider!r}")
    if choice.model_file is not None:
        _check_model_file(choice.model_file)
    try:
        box = settle_sandbox(merged["sandbox"], network, default="workspace-write")
    except SandboxUnavailableError as exc:
        raise UsageError(str(exc)) from None
    if box.warning is not None:
        err.print(f"[bold red]warning:[/] [red]{escape(box.warning)}[/]")
    retries = merged.get("max_retries")
    limits = settle_limits(merged, choice)
    return RunSettings(choice, root, box.mode, box.network, approval, merged["max_turns"] or 0,
                       dict(cfg.mcp_servers), constrained=constrained or "off",
                       max_retries=DEFAULT_RETRIES if retries is None else retries,
                       plan=plan if plan is not None else cfg.mode == "plan", hooks=cfg.hooks,
                       diagnostics=merged.get("diagnostics") is not False, diagnostic_commands=cfg.diagnostic_commands,
                       rescues=merged.get("rescues"), strategy=merged.get("strategy"), snapshots=dict(cfg.snapshots),
                       candidates=merged.get("candidates"), **limits)


def settle_limits(merged: dict[str, Any], choice: ModelChoice) -> dict[str, Any]:
    """``max_cost``, ``max_tokens``, ``max_time`` (seconds) of flags and config; UsageError for
    a bad duration, or a cost limit on a model the catalog has no price for (issue 36)."""
    from codeloop.agent.budget import BudgetPriceError, require_price
    from codeloop.config import parse_duration

    time_limit = merged.get("max_time")
    if isinstance(time_limit, str):
        try:
            time_limit = parse_duration(time_limit)
        except ValueError as exc:
            raise UsageError(f"--max-time {exc}") from None
    elif time_limit is not None:
        time_limit = float(time_limit)
    cost = merged.get("max_cost")
    if cost is not None and not choice.local:  # the local model costs nothing (its tokens and time count)
        from codeloop.profiles import create_profile

        model = choice.model or create_profile(choice.profile, None).model
        try:
            require_price(model)
        except BudgetPriceError as exc:
            raise UsageError(str(exc)) from None
    return {"max_cost": cost, "max_tokens": merged.get("max_tokens"), "max_time": time_limit}


def _check_model_file(path: str) -> None:
    """UsageError unless ``path`` (relative to the current directory) is a readable GGUF file:
    said before anything is installed or started."""
    from codeloop.llm.llama_install import LocalModelError
    from codeloop.llm.llama_server import model_file

    try:
        model_file(path)
    except LocalModelError as exc:
        raise UsageError(str(exc)) from None


def one_shot_command(task: str | None, root: Path) -> Any:
    """The custom command ``codeloop run /NAME args`` names (None for a plain task), so its
    ``model`` can take part in choosing the model; CommandError when it does not exist."""
    call = command_call(task, root) if task else None
    return call[0] if call else None


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


def resumes_paused(session_id: str) -> bool:
    """True when the session's last input was paused by a limit (issue 36): ``codeloop run
    --resume ID`` without a TASK then goes on with it instead of opening a chat."""
    from codeloop.sessions import load_events
    from codeloop.sessions.catalog import paused_input

    try:
        return paused_input(load_events(session_id))
    except (OSError, ValueError, LookupError):
        return False  # an unknown id fails later with its own message


def register(app: typer.Typer) -> None:
    """Add ``codeloop run``."""

    @app.command("run")
    def run(
        task: str | None = typer.Argument(
            None, help="What the agent should do (none: start a chat); /NAME ARGS runs a custom command."),
        cwd: Path = typer.Option(Path("."), "--cwd", help="Workspace directory (default: current directory)."),
        json_out: bool = typer.Option(False, "--json", help="One JSON event per line on stdout."),
        quiet: bool = typer.Option(False, "--quiet", help="Print only the final answer."),
        model: str | None = typer.Option(None, "--model", help="Model id (default: the profile's)."),
        model_file: Path | None = typer.Option(
            None, "--model-file", metavar="PATH.gguf",
            help="Serve this local GGUF model with llama-server (as the embedded model is) and use it; "
                 "no API key or --base-url is used. Config: model_file."),
        gpu_layers: int | None = typer.Option(
            None, "--gpu-layers", max=10_000, metavar="N",
            help="Layers the local llama-server offloads to a GPU (its --n-gpu-layers); needs a llama-server "
                 "built with GPU support. Config: gpu_layers."),
        provider: str | None = typer.Option(None, "--provider",
                                            help="openai, anthropic, gemini or openai_compatible."),
        profile: str | None = typer.Option(None, "--profile", help="openai, anthropic, gemini or text."),
        base_url: str | None = typer.Option(None, "--base-url", help="API root, e.g. http://127.0.0.1:8080/v1."),
        max_turns: int | None = typer.Option(None, "--max-turns", min=0, max=1_000_000,
                                             help="Stop after this many turns (0 = no limit)."),
        max_retries: int | None = typer.Option(
            None, "--max-retries", min=0, max=100,
            help=f"Retries of one model call after a 429, 5xx or dropped connection (default {DEFAULT_RETRIES}; "
                 "0 = none)."),
        sandbox: str | None = typer.Option(None, "--sandbox",
                                           help="read-only, workspace-write (default) or off (no sandbox; "
                                                "full is its deprecated name)."),
        network: str | None = typer.Option(
            None, "--network",
            help="on or off for commands (default: off in a sandbox, on with --sandbox off). "
                 "off holds in every mode, or the run refuses."),
        approval: str | None = typer.Option(None, "--approval", help="never-ask, on-risk (default) or always-ask."),
        approval_from: str | None = typer.Option(
            None, "--approval-from",
            help="Who answers a call that needs approval: terminal (default) asks here and also takes an answer "
                 "given with codeloop approvals (with no terminal, such calls are refused); store waits for "
                 "codeloop approvals approve|deny ID from any shell (a headless run answered from elsewhere)."),
        resume: str | None = typer.Option(None, "--resume", help="Continue the session with this id."),
        continue_: bool = typer.Option(False, "--continue", help="Continue the latest session of this workspace."),
        plan: bool | None = typer.Option(
            None, "--plan/--no-plan",
            help="Plan mode: the agent may only read (shell in a read-only sandbox) and ends with a plan; "
                 "in a chat /go runs it. Default: mode in the config files, else off."),
        output_last_message: Path | None = typer.Option(
            None, "--output-last-message", metavar="FILE",
            help="Write the last assistant message to FILE (atomically; also when the run fails)."),
        image: list[Path] | None = typer.Option(
            None, "--image", metavar="FILE",
            help="Attach an image (png, jpg, gif, webp) to the task; repeatable. The model must take images."),
        worktree: str | None = typer.Option(
            None, "--worktree", metavar="[NAME]",
            help="Run in a fresh git worktree .codeloop/worktrees/NAME on the new branch codeloop/NAME "
                 "(no NAME: run-<time>), so several agents can work on one repository; put it after "
                 "TASK or write --worktree=NAME. See codeloop worktrees."),
        constrained: str | None = typer.Option(
            None, "--constrained",
            help="auto, on or off (default): every reply must be one JSON tool call or a final answer "
                 "(servers with JSON Schema support, e.g. llama.cpp)."),
        diagnostics: bool | None = typer.Option(
            None, "--diagnostics/--no-diagnostics",
            help="After each write_file/edit_file/apply_patch, tell the model about syntax errors the edit "
                 "introduced (and run the diagnostics commands of the config files). Default: on, unless "
                 "diagnostics = false in the config files."),
        max_cost: float | None = typer.Option(
            None, "--max-cost", min=0.0, metavar="USD",
            help="Stop before a model call that could take the run over USD at list price (subagents "
                 "included); the session pauses: --resume with a higher --max-cost goes on."),
        max_tokens: int | None = typer.Option(
            None, "--max-tokens", min=1, metavar="N",
            help="Stop before a model call that could take input + output tokens over N."),
        max_time: str | None = typer.Option(
            None, "--max-time", metavar="DURATION",
            help="Stop after DURATION of work (90s, 5m, 1h30m); a model call in flight is cancelled."),
        rescues: bool | None = typer.Option(
            None, "--rescues/--no-rescues",
            help="The small-model rescues (replies read for what a small model meant, context up front, "
                 "checks before answering; docs/local-models.md). Default: on for a small context window "
                 "(local models), off otherwise; rescues = false in the config files."),
        strategy: bool | None = typer.Option(
            None, "--strategy/--no-strategy",
            help="The small-model strategy: each input drafted under a reply grammar, checked in a scratch "
                 "copy by the workspace's own checks, more candidates when a check fails, the best written "
                 "(docs/local-models.md). Default: on for the local model; strategy = false in the config files."),
        candidates: int | None = typer.Option(
            None, "--candidates", min=1, max=16, metavar="N",
            help="Drafts the small-model strategy makes of a step whose greedy draft fails a check, the greedy "
                 "one included (default 3; 1: the greedy draft only). Config: candidates."),
    ) -> None:
        """Run the coding agent on TASK in a workspace, or chat with it when TASK is left out.

        Options left out come from .codeloop/config.toml, then ~/.config/codeloop/config.toml.

        Example: codeloop run "add a --verbose flag to cli.py" --cwd ~/src/app

        \b
        Plan mode (reads only, answers with a plan; in a chat /go runs it):
          codeloop run --plan "how would you add caching?"
        Images (also @shot.png in a chat message) and custom commands (.codeloop/commands/review.md):
          codeloop run --image shot.png "make the page look like this"
          codeloop run /review src/app.py
        In a fresh git worktree on branch codeloop/fix-login, merged afterwards:
          codeloop run "fix the login bug" --worktree=fix-login
          codeloop worktrees merge fix-login
        In CI (no terminal: calls needing approval are refused, exit code 4):
          codeloop run "fix the failing test" --json --approval never-ask \\
            --output-last-message answer.md > events.jsonl
        On a server, answered from another shell (codeloop approvals list; approve ID):
          codeloop run "upgrade the dependencies" --approval-from store

        Exit codes: 0 completed, 1 model/provider error, 2 bad usage or configuration, 3 turn
        limit, 4 a call needed approval and no terminal could answer, 130 interrupted.
        """
        import asyncio

        from rich.console import Console

        err = Console(stderr=True, soft_wrap=True)
        mode = "json" if json_out else "quiet" if quiet else "rich"
        last_message_path: Path | None = None
        try:
            if output_last_message is not None:
                last_message_path = check_output_path(output_last_message)
            root = cwd.expanduser().resolve()
            if not root.is_dir():
                raise UsageError(f"--cwd {str(cwd)!r} is not a directory: create it or pass an existing one")
            command = one_shot_command(task, root)
            if model is not None and model_file is not None:
                raise UsageError("--model and --model-file exclude each other: the file is the model")
            flags = {"model": model or (command.model if command else None), "provider": provider,
                     "profile": profile, "base_url": base_url, "sandbox": sandbox, "approval": approval,
                     "max_turns": max_turns, "max_retries": max_retries, "diagnostics": diagnostics,
                     "rescues": rescues, "strategy": strategy, "max_cost": max_cost, "max_tokens": max_tokens, "max_time": max_time,
                     "model_file": None if model_file is None else str(model_file), "gpu_layers": gpu_layers,
                     "candidates": candidates}
            settings = settle_options(root, flags, network, err, constrained, plan)
            if approval_from not in (None, "terminal", "store"):
                raise UsageError(f"unknown --approval-from {approval_from!r}: use terminal or store")
            settings = dataclasses.replace(settings, approval_from=approval_from or "terminal")
            resume_id = resume_target(root, resume, continue_)
            if task is None and mode == "json" and not (resume_id and resumes_paused(resume_id)):
                raise UsageError("--json needs a TASK: codeloop run \"TASK\" --json")
            if task is None and image:
                raise UsageError("--image goes with a TASK; in a chat, name the image in a message: @shot.png")
            if worktree is not None:
                settings = dataclasses.replace(settings, root=start_worktree(root, worktree, resume_id, err))
            prompt = None if task is None else prepare(task, settings.root, settings.choice)
            go_on = task is None and resume_id is not None and resumes_paused(resume_id)
            if prompt is not None and image:
                prompt = dataclasses.replace(prompt, images=option_images(image, settings.choice) + prompt.images)
        except (UsageError, OutputPathError, CommandError, ImageError) as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(EXIT_USAGE) from None
        renderer = Renderer(mode, Console(highlight=False, soft_wrap=True), err)
        renderer.hints = fix_hints(settings.choice)
        log_id: str | None = None
        code = EXIT_USAGE
        try:
            if prompt is None and not go_on:
                reason, log_id, unanswered = asyncio.run(run_chat(Runner(settings, renderer, err), resume_id))
            else:
                reason, log_id, unanswered = asyncio.run(run_task(prompt, settings, resume_id, renderer, err))
            code = EXIT_CODES.get(reason, 1)
            if code == 0 and unanswered:
                code = EXIT_NOT_APPROVED
        except KeyboardInterrupt:
            err.print("[yellow]interrupted[/]")
            code = 130
        except (UsageError, CommandError) as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
        except Exception as exc:  # configuration problems found late (adapter, sandbox, session id, MCP)
            err.print(f"[red]error:[/] {escape(type(exc).__name__)}: {escape(str(exc))}")
        finally:
            if last_message_path is not None:
                problem = write_last_message(last_message_path, renderer.last_message)
                if problem is not None:
                    err.print(f"[yellow]warning: {escape(problem)}[/]")
        if code in (EXIT_USAGE, 130):
            raise typer.Exit(code)
        if mode == "quiet" and renderer.final_text:
            typer.echo(renderer.final_text)
        if settings.plan and task is not None and code == 0 and mode == "rich":
            err.print(escape(one_shot_hint(log_id)), highlight=False)
        if renderer.paused is not None and log_id:
            from codeloop.cli.run_terminal import describe_budget_stop

            err.print(f"[yellow]{escape(describe_budget_stop(renderer.paused).replace('ID', log_id))}[/]",
                      highlight=False)
        if log_id and mode != "quiet":
            err.print(f"session {log_id}  (continue: codeloop run --resume {log_id}; "
                      f"undo: codeloop rewind {log_id} --to TURN)", highlight=False)
        raise typer.Exit(code)
