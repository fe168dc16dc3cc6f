"""``codeloop relay``: drive a workspace from any web chat by copy and paste.

Commands: ``new``, ``step``, ``watch``, ``resume``, ``status``, ``approve``, ``deny``,
``limits`` (DESIGN.md "Contracts").
Every command prints what to paste where; ``--json`` prints one JSON document instead
(``watch --json``: one JSON event per line). Errors are one line on stderr, exit 1.

The commands share most of their options: each is spelled once in :data:`_PARAMS` and a
command names the ones it takes (:func:`_command`), receiving the relay settings among them
as one :class:`RelayConfig`. The messages telling the user what to paste where live here,
next to the commands that print them; the logic is in ``codeloop.relay``. The module is a
little over 500 lines because those eight commands share that one option table and those
messages; split by command, each part would import or repeat them.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, cast

import typer

from codeloop.cli.app import command_group

# The relay engine is imported inside each command so that `codeloop --help` and the other
# faces do not pay for it (cold start, docs/cli.md).
if TYPE_CHECKING:
    from codeloop.relay.config import RelayConfig
    from codeloop.relay.engine import StepReport
    from codeloop.relay.progress import RelayEvent
    from codeloop.relay.session import SessionState

LARGE_OUTBOX_BYTES = 100_000
"""Above this size the user is warned that a chat may refuse the paste."""

relay_app = command_group(
    "relay",
    "Drive a workspace from any chat model by copy and paste: codeloop writes an outbox file, you paste it "
    "into the chat, save the reply in the inbox, and codeloop applies it.\n\n"
    'Example: codeloop relay new "add a README" --root ~/relay')


def _option(decls: str, help: str, kind: Any = str | None) -> Any:
    return Annotated[kind, typer.Option(decls, help=help)]


_SESSION_HELP = "Session id (default: the active session)."
_HELD_HELP = "The id 'relay step' printed (e.g. 3-2), or its pending-call id (codeloop approvals list)."
_PARAMS: dict[str, Any] = {
    "task": Annotated[str, typer.Argument(help="What the model should do, in plain words.")],
    "session_id": Annotated[str | None, typer.Argument(help=_SESSION_HELP)],
    "held_id": Annotated[str, typer.Argument(help=_HELD_HELP)],
    "reason": _option("--reason", "Why, for the model (shown in the next outbox)."),
    "root": _option("--root",
                    "Relay root holding inbox/, outbox/, sessions/ (env CODELOOP_RELAY_ROOT; default: .)"),
    "workspace": _option("--workspace", "Directory the model works on (default ROOT/workspace)."),
    "session": _option("--session", _SESSION_HELP),
    "inbox": _option("--inbox", "Inbox directory (default ROOT/inbox)."),
    "outbox": _option("--outbox", "Outbox directory (default ROOT/outbox)."),
    "sessions": _option("--sessions", "Sessions directory (default ROOT/sessions)."),
    "timeout": _option("--timeout", "Seconds a RUN_COMMAND may run (default 30).", float | None),
    "output_limit": _option("--output-limit", "Characters of command output kept (default 4000).",
                            int | None),
    "max_listed_files": _option("--max-listed-files", "Files listed in an outbox, 0 for all (default 2000).",
                                int | None),
    "max_read_chars": _option("--max-read-chars", "Characters of a requested file shown, 0 for all "
                              "(default 100000).", int | None),
    "config_file": _option("--config", "TOML config file (default ROOT/relay.toml when it exists)."),
    "clipboard": _option("--clipboard/--no-clipboard", "Copy each new outbox to the clipboard if possible.",
                         bool | None),
    "policy": _option("--policy", "Policy preset judging every command: restrictive, standard or permissive "
                      "(default; env CODELOOP_RELAY_POLICY). The session keeps it."),
    "as_json": _option("--json", "Print JSON for machines instead of text.", bool),
    "max_steps": _option("--max-steps", "Replies the session may apply; later ones are set aside until the "
                         "limit is raised (codeloop relay limits).", int | None),
    "to": _option("--to", "Sequence number to go back to: the files as they were after that reply "
                  "(0: before every reply).", int),
    "dry_run": _option("--dry-run", "Only list the changes.", bool),
    "force": _option("--force", "Overwrite files changed outside the session since.", bool),
    "max_time": _option("--max-time", "Wall time the session's commands may take in all, e.g. 90s, 10m, "
                        "1h30m; a command still running then is stopped."),
}
"""Every parameter of the relay commands, by name."""
_DEFAULTS = {"task": inspect.Parameter.empty, "held_id": inspect.Parameter.empty, "as_json": False, "to": 0,
             "dry_run": False, "force": False}
"""Defaults other than None (``empty``: required)."""
_SETTINGS = ("inbox", "outbox", "sessions", "workspace", "timeout", "output_limit", "max_listed_files",
             "max_read_chars", "clipboard", "policy")
"""The parameters that are relay settings (``load_config`` flags); with --root and --config
they become the command's ``config``."""


def _fail(message: str) -> NoReturn:
    typer.echo(f"codeloop relay: {message}", err=True)
    raise typer.Exit(1)


@contextmanager
def _relay_errors() -> Iterator[None]:
    from codeloop.relay.engine import RelayError

    try:
        yield
    except RelayError as exc:
        _fail(str(exc))


def _command(name: str, params: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``func(config, **rest)`` as ``codeloop relay NAME`` with the parameters
    ``params`` names (in the order --help lists them)."""

    def register(func: Callable[..., None]) -> Callable[..., None]:
        def command(**given: Any) -> None:
            from codeloop.relay.config import RelayConfigError, load_config

            flags = {key: given.pop(key) for key in _SETTINGS if key in given}
            try:
                config = load_config(given.pop("root"), flags, given.pop("config_file"))
            except RelayConfigError as exc:
                _fail(str(exc))
            func(config, **given)

        # Typer reads the parameters from the signature and passes them by keyword.
        cast(Any, command).__signature__ = inspect.Signature([
            inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=_DEFAULTS.get(p),
                              annotation=_PARAMS[p]) for p in params.split()
        ])
        command.__doc__ = func.__doc__
        relay_app.command(name)(command)
        return func

    return register


def _json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _root_flag(config: RelayConfig) -> str:
    return f" --root {config.root}"


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.split("\n"))


def _print_event(event: RelayEvent) -> None:
    """Human form of one event, printed as it happens."""
    from codeloop.relay.progress import (
        CommandFinished,
        LimitReached,
        ModelMessage,
        ReplySkipped,
        ReplyStarted,
    )
    from codeloop.relay.results import format_result

    match event:
        case ReplyStarted():
            resumed = ""
            if event.already_applied:
                resumed = (f" (continuing an interrupted step: {event.already_applied} command(s) were "
                           "already applied)")
            typer.secho(f"Applying {event.source} as the reply to outbox #{event.sequence}{resumed}",
                        bold=True)
        case CommandFinished():
            color = typer.colors.GREEN if event.result.success else typer.colors.RED
            typer.secho(_indent(format_result(event.result), "  "), fg=color)
        case ModelMessage():
            typer.secho("  Message from the model:", fg=typer.colors.CYAN, bold=True)
            typer.echo(_indent(event.text or "(empty)"))
        case ReplySkipped():
            typer.secho(f"  Skipped {event.path}: {event.reason}", fg=typer.colors.YELLOW, err=True)
        case LimitReached():
            typer.secho(f"  {event.message}", fg=typer.colors.YELLOW, bold=True)


def _next_steps(config: RelayConfig, path: Path, copied: str | None, watching: bool) -> None:
    typer.secho(f"\nNext outbox: {path}", bold=True)
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size > LARGE_OUTBOX_BYTES:
        typer.secho(
            f"  Note: it is {size // 1000} KB; some chats refuse long messages. If yours does, list fewer "
            "files (--max-listed-files 200) or ask the model to read smaller parts of files.",
            fg=typer.colors.YELLOW,
        )
    if copied:
        typer.echo(f"  1. Paste it into your chat model: it is already on the clipboard ({copied}).")
    else:
        typer.echo("  1. Copy the whole file (open it, or: cat FILE) and paste it into your chat model.")
    typer.echo(f"  2. Save the model's whole reply as a .txt file in {config.inbox_dir}/ "
               "(any name, e.g. reply.txt).")
    if watching:
        typer.echo("  3. This command picks it up by itself; stop with Ctrl-C.")
    else:
        typer.echo(f"  3. Run: codeloop relay step{_root_flag(config)}   "
                   "(or keep 'codeloop relay watch' running)")


def _print_done(config: RelayConfig, state: SessionState, skipped: int) -> None:
    from codeloop.relay.engine import pending_replies

    typer.secho(f"\nSession {state.session_id} is complete.", fg=typer.colors.GREEN, bold=True)
    if state.summary:
        typer.echo("Summary from the model:\n" + _indent(state.summary))
    failed = [r for r in state.last_results if not r.success]
    if failed:
        typer.secho(f"Note: {len(failed)} command(s) of the last reply failed (see above).",
                    fg=typer.colors.YELLOW)
    if skipped:
        typer.secho(f"Note: {skipped} command(s) after [DONE] were not run.", fg=typer.colors.YELLOW)
    typer.echo(f"Workspace: {state.workspace}")
    left = pending_replies(config)
    if left:
        typer.secho(f"{len(left)} file(s) remain in {config.inbox_dir} and were not applied.",
                    fg=typer.colors.YELLOW)


def _print_held(config: RelayConfig, state: SessionState) -> None:
    held = state.held
    if held is None:
        return
    typer.secho(f"\nWaiting for your approval ({held.id}): {held.reason}", fg=typer.colors.YELLOW, bold=True)
    typer.echo(_indent(held.command))
    typer.echo(f"  Run it:      codeloop relay approve {held.id}{_root_flag(config)}")
    typer.echo(f"  Refuse it:   codeloop relay deny {held.id} --reason \"why\"{_root_flag(config)}")
    typer.echo(f"  Pending call {held.pending} in the approvals store: any shell may answer it "
               "(codeloop approvals list)")
    typer.echo("  The rest of the reply runs after your answer; paste the next outbox only then.")


def _skipped(report: StepReport) -> int:
    from codeloop.relay.progress import SessionCompleted

    return next((e.skipped_after_done for e in report.events if isinstance(e, SessionCompleted)), 0)


def _held_json(state: SessionState) -> dict[str, Any] | None:
    from codeloop.relay.engine import waiting_for_answer

    held = waiting_for_answer(state)
    return None if held is None else held.to_json()


async def _copy(config: RelayConfig, path: Path) -> str | None:
    from codeloop.relay.clipboard import copy_file_to_clipboard

    return await copy_file_to_clipboard(path) if config.clipboard else None


def _report_json(config: RelayConfig, report: StepReport, copied: str | None) -> dict[str, Any]:
    from codeloop.relay.engine import outbox_path
    from codeloop.relay.progress import event_to_json

    state = report.session
    return {"sessionId": state.session_id, "sequence": state.sequence_number, "complete": state.is_complete,
            "summary": state.summary, "replies": report.replies, "blocked": report.blocked,
            "outbox": None if state.is_complete else str(outbox_path(config, state)), "copiedWith": copied,
            "workspace": state.workspace, "held": _held_json(state),
            "events": [event_to_json(e) for e in report.events], "limits": state.limits.to_json()}


_STEP_PARAMS = ("root session inbox outbox sessions timeout output_limit max_listed_files max_read_chars "
                "config_file clipboard as_json")


def _limits(max_steps: int | None, max_time: str | None) -> tuple[int | None, float | None]:
    """The checked values of --max-steps and --max-time (a one-line error otherwise)."""
    from codeloop.config import parse_duration

    if max_steps is not None and max_steps < 1:
        _fail(f"--max-steps {max_steps}: give a whole number of replies of at least 1")
    try:
        seconds = None if max_time is None else parse_duration(max_time)
    except ValueError as exc:
        _fail(f"--max-time: {exc}")
    return max_steps, seconds


def _limit_notice(state: SessionState) -> str | None:
    from codeloop.relay.limits import notice

    return notice(state)


def _limits_line(state: SessionState) -> str | None:
    limits = state.limits
    parts = [f"{state.sequence_number - 1} of {limits.max_steps} replies"] if limits.max_steps else []
    if limits.max_time_s is not None:
        parts.append(f"{limits.command_s:.1f} s of {limits.max_time_s:g} s of command time")
    return f"  Limits: {', '.join(parts)} used" if parts else None


@_command("new", "task root workspace inbox outbox sessions timeout output_limit max_listed_files "
          "max_read_chars config_file clipboard policy max_steps max_time as_json")
def new_command(config: RelayConfig, task: str, max_steps: int | None, max_time: str | None,
                as_json: bool) -> None:
    """Start a session and write its first outbox.

    Example: codeloop relay new "write a fizzbuzz.py with tests" --root ~/relay --workspace ~/code/fizz
    Example: codeloop relay new "tidy the docs" --root ~/relay --policy standard
    Example: codeloop relay new "fix the tests" --root ~/relay --max-steps 20 --max-time 10m
    """
    import asyncio

    from codeloop.relay.engine import start_session
    from codeloop.relay.limits import SessionLimits

    steps, seconds = _limits(max_steps, max_time)
    with _relay_errors():
        state, path = asyncio.run(start_session(config, task, limits=SessionLimits(steps, seconds)))
    copied = asyncio.run(_copy(config, path))
    if as_json:
        _json({"sessionId": state.session_id, "sequence": state.sequence_number, "outbox": str(path),
               "inbox": str(config.inbox_dir), "workspace": state.workspace, "policy": state.policy,
               "copiedWith": copied, "limits": state.limits.to_json()})
        return
    typer.secho(f"Started relay session {state.session_id}", bold=True)
    typer.echo(f"  Workspace: {state.workspace}")
    typer.echo(f"  Policy: {state.policy}")
    line = _limits_line(state)
    if line:
        typer.echo(line)
    _next_steps(config, path, copied, watching=False)


@_command("step", _STEP_PARAMS)
def step_command(config: RelayConfig, session: str | None, as_json: bool) -> None:
    """Apply the replies waiting in the inbox, write the next outbox, and exit.

    Exit status 1 when a reply could not be read (it stays in the inbox) or on errors.
    Example: codeloop relay step --root ~/relay
    """
    import asyncio

    from codeloop.relay.engine import outbox_path, step

    with _relay_errors():
        report = asyncio.run(step(config, session, None if as_json else _print_event))
    state = report.session
    copied = None
    if report.replies and not state.is_complete:
        copied = asyncio.run(_copy(config, outbox_path(config, state)))
    if as_json:
        _json(_report_json(config, report, copied))
    elif _held_json(state) is not None:
        _print_held(config, state)
    elif state.is_complete:
        _print_done(config, state, _skipped(report))
    elif _limit_notice(state):  # the LimitReached event said it when this step reached the limit
        if not report.replies:
            typer.secho(_limit_notice(state) or "", fg=typer.colors.YELLOW, bold=True)
        typer.echo(f"\nNewest outbox: {outbox_path(config, state)} (it says the session stopped)")
    elif report.replies:
        _next_steps(config, outbox_path(config, state), copied, watching=False)
    elif not report.blocked:
        typer.echo(f"No reply waiting in {config.inbox_dir}/.")
        _next_steps(config, outbox_path(config, state), None, watching=False)
    if report.blocked:
        raise typer.Exit(1)


@_command("watch", _STEP_PARAMS)
def watch_command(config: RelayConfig, session: str | None, as_json: bool) -> None:
    """Wait for replies in the inbox and apply each one as soon as it is saved, until the
    session is done (Ctrl-C stops). --json prints one JSON event per line.

    Example: codeloop relay watch --root ~/relay
    """
    import asyncio

    from codeloop.relay.engine import RelayError, find_session, outbox_path
    from codeloop.relay.progress import event_to_json
    from codeloop.relay.watch import watch

    def on_event(event: RelayEvent) -> None:
        if as_json:
            typer.echo(json.dumps(event_to_json(event), ensure_ascii=False))
            sys.stdout.flush()
        else:
            _print_event(event)

    async def main() -> StepReport | None:
        state = find_session(config, session)
        if state.is_complete:
            raise RelayError(f"session {state.session_id} is complete; start a new one with codeloop relay new")
        path = outbox_path(config, state)
        copied = await _copy(config, path) if path.is_file() else None
        if not as_json:
            typer.secho(f"Watching {config.inbox_dir}/ for session {state.session_id}.", bold=True)
            _next_steps(config, path, copied, watching=True)

        async def on_step(report: StepReport) -> None:
            done = report.session
            if _held_json(done) is not None and not as_json:
                _print_held(config, done)
            if not report.replies or done.is_complete or _held_json(done) is not None:
                return
            nxt = outbox_path(config, done)
            copied_now = await _copy(config, nxt)
            if not as_json:
                _next_steps(config, nxt, copied_now, watching=True)

        return await watch(config, state.session_id, on_event, on_step)

    try:
        report = asyncio.run(main())
    except RelayError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        typer.echo("\nStopped watching. Resume later with: codeloop relay watch" + _root_flag(config),
                   err=True)
        raise typer.Exit(130) from None
    if report is not None and report.session.is_complete and not as_json:
        _print_done(config, report.session, _skipped(report))


@_command("resume", "session_id root inbox outbox sessions max_listed_files max_read_chars config_file "
          "clipboard as_json")
def resume_command(config: RelayConfig, session_id: str | None, as_json: bool) -> None:
    """Make a session the active one and offer its current outbox again (same sequence,
    same results and requested files); finishes a step that was interrupted.

    Example: codeloop relay resume a1b2c3d4 --root ~/relay
    """
    import asyncio

    from codeloop.relay.engine import resume

    with _relay_errors():
        state, path = asyncio.run(resume(config, session_id, None if as_json else _print_event))
    if state.is_complete:
        if as_json:
            _json({"sessionId": state.session_id, "complete": True, "summary": state.summary, "outbox": None})
        else:
            _print_done(config, state, 0)
        return
    copied = asyncio.run(_copy(config, path))
    if as_json:
        _json({"sessionId": state.session_id, "sequence": state.sequence_number, "complete": False,
               "outbox": str(path), "pendingReadFiles": list(state.read_file_requests),
               "held": _held_json(state), "copiedWith": copied})
        return
    typer.secho(f"Resumed session {state.session_id} at outbox #{state.sequence_number}", bold=True)
    typer.echo(f"  Task: {state.task.splitlines()[0] if state.task else ''}")
    if _held_json(state) is not None:
        _print_held(config, state)
        return
    _next_steps(config, path, copied, watching=False)


def _answer(config: RelayConfig, held_id: str, approved: bool, note: str | None, session: str | None,
            as_json: bool) -> None:
    import asyncio

    from codeloop.relay.engine import answer_held, outbox_path

    with _relay_errors():
        report = asyncio.run(answer_held(config, held_id, approved, note, session,
                                         None if as_json else _print_event))
    state = report.session
    if as_json:
        _json(_report_json(config, report, None))
    elif _held_json(state) is not None:
        _print_held(config, state)
    elif state.is_complete:
        _print_done(config, state, 0)
    else:
        path = outbox_path(config, state)
        _next_steps(config, path, asyncio.run(_copy(config, path)), watching=False)


@_command("approve", "held_id root session config_file as_json")
def approve_command(config: RelayConfig, held_id: str, session: str | None, as_json: bool) -> None:
    """Run a command the session's policy held for approval (once), then the rest of its
    reply, and write the next outbox.

    Example: codeloop relay approve 3-2 --root ~/relay
    """
    _answer(config, held_id, True, None, session, as_json)


@_command("deny", "held_id reason root session config_file as_json")
def deny_command(config: RelayConfig, held_id: str, reason: str | None, session: str | None,
                 as_json: bool) -> None:
    """Refuse a command the session's policy held for approval: it never runs, the next
    outbox tells the model why, and the rest of its reply runs.

    Example: codeloop relay deny 3-2 --reason "do not delete the build cache" --root ~/relay
    """
    _answer(config, held_id, False, reason, session, as_json)


@_command("limits", "session_id root max_steps max_time config_file clipboard as_json")
def limits_command(config: RelayConfig, session_id: str | None, max_steps: int | None, max_time: str | None,
                   as_json: bool) -> None:
    """Show or change a session's limits on replies (--max-steps) and command time (--max-time);
    the newest outbox is written again, so once a reached limit is raised it no longer says stop.

    Example: codeloop relay limits --max-steps 40 --root ~/relay
    Example: codeloop relay limits a1b2c3d4 --max-time 30m --root ~/relay
    """
    import asyncio

    from codeloop.relay.engine import set_limits
    from codeloop.relay.limits import reached

    steps, seconds = _limits(max_steps, max_time)
    with _relay_errors():
        state, path = asyncio.run(set_limits(config, session_id, max_steps=steps, max_time_s=seconds))
    stopped = reached(state)
    copied = asyncio.run(_copy(config, path)) if stopped is None and (steps or seconds) else None
    if as_json:
        _json({"sessionId": state.session_id, "sequence": state.sequence_number, "outbox": str(path),
               "limits": state.limits.to_json(), "limitReached": stopped, "copiedWith": copied})
        return
    typer.secho(f"Session {state.session_id}", bold=True)
    typer.echo(_limits_line(state) or "  Limits: none")
    if stopped is not None:
        typer.secho(f"  The {stopped} limit is reached: replies are set aside until you raise it.",
                    fg=typer.colors.YELLOW)
        return
    _next_steps(config, path, copied, watching=False)


@_command("rewind", "session_id root to dry_run force config_file as_json")
def rewind_command(config: RelayConfig, session_id: str | None, to: int, dry_run: bool, force: bool,
                   as_json: bool) -> None:
    """Put the session's files back as they were after reply --to (0: before every reply):
    what its commands changed, RUN_COMMAND's included. Refuses, listing them, when files
    changed outside the session since (--force overwrites them).

    Example: codeloop relay rewind --to 0 --dry-run --root ~/relay
    """
    from codeloop.relay.engine import rewind_session

    if to < 0:
        _fail(f"--to {to} is not a sequence number (0 or more)")
    with _relay_errors():
        state, result = rewind_session(config, session_id, to, dry_run=dry_run, force=force)
    if as_json:
        _json({"sessionId": state.session_id, **result.to_json()})
        return
    head = "Would rewind" if result.dry_run else "Rewound"
    typer.echo(f"{head} session {state.session_id} to reply {to}: {len(result.changes)} change(s)")
    for change in result.changes:
        typer.echo(f"  {change.describe()}")
    for item in result.not_covered:
        typer.echo(f"  not covered: {item.path} ({item.reason})")


@_command("redo", "session_id root dry_run force config_file as_json")
def redo_command(config: RelayConfig, session_id: str | None, dry_run: bool, force: bool, as_json: bool) -> None:
    """Take back the session's last rewind: the files its replies had changed come back.
    Refuses when a later reply changed files, or, listing them, when files changed since
    the rewind (--force overwrites them).

    Example: codeloop relay redo --dry-run --root ~/relay
    """
    from codeloop.relay.engine import redo_session

    with _relay_errors():
        state, result = redo_session(config, session_id, dry_run=dry_run, force=force)
    if as_json:
        _json({"sessionId": state.session_id, **result.to_json()})
        return
    head = "Would redo" if result.dry_run else "Redid"
    typer.echo(f"{head} the last rewind of session {state.session_id}: {len(result.changes)} change(s)")
    for change in result.changes:
        typer.echo(f"  {change.describe()}")


@_command("status", "root inbox outbox sessions config_file as_json")
def status_command(config: RelayConfig, as_json: bool) -> None:
    """List the sessions of a relay root, newest first, and the replies waiting.

    Example: codeloop relay status --root ~/relay --json
    """
    from codeloop.relay.engine import outbox_path, pending_replies
    from codeloop.relay.session import SessionFileError, SessionState, list_sessions

    found = list_sessions(config.sessions_dir)
    pending = [str(p) for p in pending_replies(config)]
    states = [s for s in found if isinstance(s, SessionState)]
    errors = [str(e) for e in found if isinstance(e, SessionFileError)]
    active = next((s.session_id for s in states if not s.is_complete), None)
    if as_json:
        sessions = [{"sessionId": s.session_id, "task": s.task, "sequence": s.sequence_number,
                     "complete": s.is_complete, "updatedAt": s.updated_at, "workspace": s.workspace,
                     "outbox": None if s.is_complete else str(outbox_path(config, s)), "policy": s.policy,
                     "held": _held_json(s), "limits": s.limits.to_json()} for s in states]
        _json({"root": str(config.root), "active": active, "pendingReplies": pending, "sessions": sessions,
               "errors": errors})
        return
    if not states and not errors:
        typer.echo(f'No relay sessions in {config.root}. Start one with: '
                   f'codeloop relay new "TASK"{_root_flag(config)}')
        return
    for s in states:
        mark = "*" if s.session_id == active else " "
        where = "complete" if s.is_complete else f"waiting for the reply to {outbox_path(config, s).name}"
        if _held_json(s) is not None and s.held is not None:
            where = f"waiting for your approval of {s.held.id} (codeloop relay approve|deny {s.held.id})"
        task = s.task.splitlines()[0] if s.task else ""
        typer.echo(f"{mark} {s.session_id}  #{s.sequence_number:<4} {where}  {task[:60]}")
    for err in errors:
        typer.secho(f"! {err}", fg=typer.colors.RED)
    if pending:
        typer.echo(f"{len(pending)} reply file(s) waiting in {config.inbox_dir}/: "
                   f"run codeloop relay step{_root_flag(config)}")
    if active:
        typer.echo("(* = active session, the one 'step' and 'watch' use)")


def register(app: typer.Typer) -> None:
    """Add ``codeloop relay ...`` to the main app."""
    app.add_typer(relay_app, name="relay")
