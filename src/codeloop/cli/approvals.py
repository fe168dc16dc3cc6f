"""``codeloop approvals list|show|approve|deny``: answer waiting tool calls from any shell (issue 34).

Every ask of ``codeloop run``, ``codeloop tool`` and the relay waits in one pending store
(``approvals.sqlite3`` in codeloop's state directory; :mod:`codeloop.policy.pending`). These
commands read and answer it: an answer is one compare-and-set, so of two answers given at once
one counts and the other is told who answered first (exit 1). ``--json`` prints the store's
JSON form of each entry, for scripts, web pages and editors.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from codeloop.cli.app import JsonOption, command_group
from codeloop.cli.errors import fail

approvals_app = command_group(
    "approvals", "Tool calls waiting for an answer, from any shell of this machine. "
                 "Example: codeloop approvals list; codeloop approvals approve ID")

StoreOption = Annotated[Path | None, typer.Option(
    "--store", metavar="FILE",
    help="The pending store (default: approvals.sqlite3 in codeloop's state directory, $CODELOOP_STATE_DIR).")]


def _store(path: Path | None) -> Any:
    from codeloop.policy.pending import SqlitePendingStore
    from codeloop.sessions.state_dir import approvals_db_path

    return SqlitePendingStore(path or approvals_db_path())


def _who() -> str:
    """``user@host``: who answered, as the store and the session log keep it."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def _age(created: float) -> str:
    seconds = max(0, int(time.time() - created))
    return f"{seconds}s" if seconds < 120 else f"{seconds // 60}m" if seconds < 7200 else f"{seconds // 3600}h"


def _line(entry: Any) -> str:
    always = " [always: " + ", ".join(entry.remember_as) + "]" if "always" in entry.grants else ""
    status = "" if entry.status == "pending" else f"  {entry.status} by {entry.decided_by}"
    return (f"{entry.id}  {entry.face:<6} {entry.session[:20]:<20} {_age(entry.created_at):>4}  "
            f"{entry.summary(100)}  ({entry.reason}){always}{status}")


def _guarded(action: Any) -> Any:
    """``action()``; a store or id problem is one line and exit 1."""
    import sqlite3

    from codeloop.policy.pending import PendingCallError, UnknownPendingCallError

    try:
        return action()
    except (UnknownPendingCallError, PendingCallError) as exc:
        raise fail(str(exc)) from None
    except (sqlite3.Error, OSError) as exc:
        raise fail(f"the pending store cannot be read: {exc}") from None


@approvals_app.command("list")
def list_command(
    session: Annotated[str | None, typer.Option("--session", help="Only calls of this session.")] = None,
    show_all: Annotated[bool, typer.Option("--all", help="Answered, withdrawn and finished calls too.")] = False,
    as_json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Calls waiting for an answer, oldest first.

    Example: codeloop approvals list --json
    """
    entries = _guarded(lambda: _store(store).list(session, None if show_all else "pending"))
    if as_json:
        typer.echo(json.dumps([e.to_json() for e in entries], ensure_ascii=False, indent=2))
        return
    if not entries:
        typer.echo("nothing waits for an answer" if not show_all else "no calls in the pending store")
        return
    for entry in entries:
        typer.echo(_line(entry))


@approvals_app.command("show")
def show_command(
    pending_id: Annotated[str, typer.Argument(metavar="ID", help="The pending call's id (codeloop approvals list).")],
    as_json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """One call in full: what runs, why it asks, what may be granted, its answer.

    Example: codeloop approvals show 3f2a... --json
    """
    entry = _guarded(lambda: _store(store).get(pending_id))
    data = entry.to_json()
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    for key, value in data.items():
        typer.echo(f"{key}: {json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value}")


def _decide(pending_id: str, verdict: str, reason: str, always: bool, who: str | None, as_json: bool,
            store: Path | None) -> None:
    from codeloop.policy.pending import Decided

    result = _guarded(lambda: _store(store).decide(pending_id, verdict, who or _who(), reason,
                                                   "always" if always else "once"))
    if isinstance(result, Decided):
        if as_json:
            typer.echo(json.dumps({"result": "decided", "entry": result.entry.to_json()}, ensure_ascii=False))
        else:
            scope = " (always: " + ", ".join(result.entry.remember_as) + ")" if always else ""
            typer.echo(f"{result.entry.status}{scope}: {result.entry.summary(200)}")
        return
    if as_json:
        typer.echo(json.dumps({"result": "already_decided", "by": result.by, "at": result.at,
                               "verdict": result.verdict}, ensure_ascii=False))
        raise typer.Exit(1)
    raise fail(result.describe(pending_id))


@approvals_app.command("approve")
def approve_command(
    pending_id: Annotated[str, typer.Argument(metavar="ID", help="The pending call's id (codeloop approvals list).")],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the store and the session log).")] = "",
    always: Annotated[bool, typer.Option(
        "--always", help="Also remember it for the project (the command prefixes or tool the entry names).")] = False,
    who: Annotated[str | None, typer.Option("--as", metavar="NAME", help="Who answers (default: user@host).")] = None,
    as_json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Approve a waiting call: it runs once, in the process that asked. Exit 1 if it was
    already answered (says by whom and when).

    Example: codeloop approvals approve 3f2a... --reason "checked the diff"
    """
    _decide(pending_id, "approve", reason, always, who, as_json, store)


@approvals_app.command("deny")
def deny_command(
    pending_id: Annotated[str, typer.Argument(metavar="ID", help="The pending call's id (codeloop approvals list).")],
    reason: Annotated[str, typer.Option("--reason", help="Why (the model is told).")] = "",
    who: Annotated[str | None, typer.Option("--as", metavar="NAME", help="Who answers (default: user@host).")] = None,
    as_json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Deny a waiting call: it does not run, and the model is told who refused it and why.

    Example: codeloop approvals deny 3f2a... --reason "not on main"
    """
    _decide(pending_id, "deny", reason, False, who, as_json, store)


def register(app: typer.Typer) -> None:
    """Add ``codeloop approvals``."""
    app.add_typer(approvals_app)
