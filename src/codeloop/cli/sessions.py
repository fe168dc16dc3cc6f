"""``codeloop sessions list|show|export``, ``codeloop rewind``, ``undo`` and ``redo`` (docs/sessions.md)."""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from codeloop.cli.app import JsonOption, command_group
from codeloop.cli.errors import fail

T = TypeVar("T")

sessions_app = command_group("sessions",
                             "Recorded sessions of 'codeloop run'. Example: codeloop sessions list")


def _run(action: Callable[[], T]) -> T:
    # Imported here: `codeloop --help` must not pay for the agent stack (cold-start goal).
    from codeloop.environments.errors import WorkspaceError
    from codeloop.sessions import RewindRefusedError, SessionLogWarning, SessionNotFoundError

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SessionLogWarning)
            value = action()
        for w in caught:
            typer.echo(f"warning: {w.message}", err=True)
        return value
    except (SessionNotFoundError, RewindRefusedError, WorkspaceError, ValueError, OSError) as exc:
        raise fail(str(exc)) from None


@sessions_app.command("list")
def list_command(
    workspace: Annotated[Path | None, typer.Option("--workspace", help="Only sessions of this directory.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List sessions, oldest first. Example: codeloop sessions list --workspace ."""
    from codeloop.sessions import list_sessions

    infos = _run(lambda: list_sessions(workspace))
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(i) for i in infos], indent=2))
        return
    if not infos:
        typer.echo("no sessions yet (start one with: codeloop run \"TASK\")")
        return
    for i in infos:
        task = i.first_input.splitlines()[0][:60] if i.first_input else ""
        typer.echo(f"{i.id}  {i.last_event[:19]}  {i.status:<11}  {i.workspace}  {task}")


@sessions_app.command("show")
def show_command(session_id: Annotated[str, typer.Argument(help="Session id.")], as_json: JsonOption = False) -> None:
    """Show a session's summary and transcript. Example: codeloop sessions show 3f2a..."""
    from codeloop.sessions import events_to_jsonl, load_events, session_info, to_markdown

    info = _run(lambda: session_info(session_id))
    events = _run(lambda: load_events(session_id))
    if as_json:
        typer.echo(json.dumps({"session": dataclasses.asdict(info),
                               "events": [json.loads(line) for line in events_to_jsonl(events).splitlines()]},
                              indent=2, ensure_ascii=False))
        return
    typer.echo(to_markdown(session_id, events))


@sessions_app.command("export")
def export_command(
    session_id: Annotated[str, typer.Argument(help="Session id.")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl (events) or md (transcript).")] = "jsonl",
) -> None:
    """Write a session to stdout as JSONL events or Markdown. Example: codeloop sessions export ID --format md"""
    if fmt not in ("jsonl", "md"):
        raise fail(f"--format {fmt!r} is not supported; use jsonl or md", 2)
    from codeloop.sessions import events_to_jsonl, load_events, to_markdown

    events = _run(lambda: load_events(session_id))
    typer.echo(events_to_jsonl(events) if fmt == "jsonl" else to_markdown(session_id, events), nl=False)


DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Only show what would change.")]
ForceOption = Annotated[bool, typer.Option(
    "--force", help="Overwrite files changed outside the session since (listed otherwise, and nothing is done).")]
WorkspaceOption = Annotated[Path | None, typer.Option("--workspace", help="Workspace (default: the session's).")]


def _show(verb: str, session_id: str, result: object, as_json: bool) -> None:
    from codeloop.sessions import RewindResult

    assert isinstance(result, RewindResult)
    if as_json:
        typer.echo(json.dumps({"session": session_id, **result.to_json()}))
        return
    head = "would rewind" if result.dry_run else verb
    typer.echo(f"{head} {session_id} to turn {result.turn}: {len(result.restored)} file(s) restored, "
               f"{len(result.deleted)} deleted, {result.events_dropped} event(s) dropped")
    if result.changes:
        for change in result.changes:
            typer.echo(f"  {change.describe()}")
    else:
        for path in result.restored:
            typer.echo(f"  restored {path}")
        for path in result.deleted:
            typer.echo(f"  deleted  {path}")
    for path in result.outside:
        typer.echo(f"  overwrote a change made outside the session: {path}")
    if result.not_covered:
        typer.echo("not covered by snapshots (left as they are):")
        for item in result.not_covered:
            typer.echo(f"  {item.path} ({item.reason})")


def _latest(session_id: str | None) -> str:
    if session_id is not None:
        return session_id
    from codeloop.sessions import list_sessions

    infos = _run(lambda: list_sessions(Path.cwd()))
    if not infos:
        raise fail("no session of this directory; pass a session id (codeloop sessions list)", 2)
    return infos[-1].id


def rewind_command(
    session_id: Annotated[str, typer.Argument(help="Session id.")],
    to: Annotated[int, typer.Option("--to", min=0, help="Turn to go back to (0: before the first reply).")],
    workspace: WorkspaceOption = None,
    dry_run: DryRunOption = False,
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> None:
    """Restore the files and conversation of a session to the end of a turn. Example: codeloop rewind ID --to 2"""
    from codeloop.sessions import rewind

    result = _run(lambda: rewind(session_id, to, workspace, dry_run=dry_run, force=force))
    _show("rewound", session_id, result, as_json)


def undo_command(
    session_id: Annotated[str | None, typer.Argument(help="Session id (default: the latest of this directory).")] = None,
    workspace: WorkspaceOption = None,
    dry_run: DryRunOption = False,
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> None:
    """Take back the last turn of a session that changed files. Example: codeloop undo"""
    from codeloop.sessions import undo

    sid = _latest(session_id)
    result = _run(lambda: undo(sid, workspace, dry_run=dry_run, force=force))
    _show("undid the last change of", sid, result, as_json)


def redo_command(
    session_id: Annotated[str | None, typer.Argument(help="Session id (default: the latest of this directory).")] = None,
    workspace: WorkspaceOption = None,
    dry_run: DryRunOption = False,
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> None:
    """Take back the last rewind or undo of a session. Example: codeloop redo"""
    from codeloop.sessions import redo

    sid = _latest(session_id)
    result = _run(lambda: redo(sid, workspace, dry_run=dry_run, force=force))
    _show("redid", sid, result, as_json)


def register(app: typer.Typer) -> None:
    """Add ``sessions`` and ``rewind`` to the root app."""
    app.add_typer(sessions_app)
    app.command("rewind")(rewind_command)
    app.command("undo")(undo_command)
    app.command("redo")(redo_command)
