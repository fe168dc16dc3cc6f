"""The ``codeloop`` Typer app: one sub-app or command per face.

Each face's commands live in their own module (``cli/tool.py``, ``cli/relay.py``, ...)
and register themselves here; this module only wires them together. The console script
enters through :mod:`codeloop.cli.main`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer


def command_group(name: str, help: str, **options: Any) -> typer.Typer:
    """A command group made as every ``codeloop`` group is: its help when called bare, in plain
    text (no rich markup)."""
    return typer.Typer(name=name, help=help, no_args_is_help=True, rich_markup_mode=None, **options)


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]
"""The ``--json`` flag of the commands that print either text or JSON."""

app = command_group(
    "codeloop", "codeloop: a coding-agent engine. Example: codeloop run \"add a --verbose flag to cli.py\"",
    add_completion=False, pretty_exceptions_enable=False)


@app.command()
def version() -> None:
    """Print the codeloop version. Example: codeloop version"""
    from importlib.metadata import version as _v

    typer.echo(_v("codeloop"))


def _tool(into: typer.Typer) -> None:
    from codeloop.cli import tool

    tool.register(into)


def _run(into: typer.Typer) -> None:
    from codeloop.cli import run

    run.register(into)


def _relay(into: typer.Typer) -> None:
    from codeloop.cli import relay

    relay.register(into)


def _spaces(into: typer.Typer) -> None:
    from codeloop.cli import spaces

    spaces.register(into)


def _index(into: typer.Typer) -> None:
    from codeloop.cli import index

    index.register(into)


def _codali(into: typer.Typer) -> None:
    from codeloop.cli import codali

    codali.register(into)


def _sessions(into: typer.Typer) -> None:
    from codeloop.cli import sessions

    sessions.register(into)


def _trust(into: typer.Typer) -> None:
    from codeloop.cli import trust

    trust.register(into)


def _worktrees(into: typer.Typer) -> None:
    from codeloop.cli import worktrees

    worktrees.register(into)


def _approvals(into: typer.Typer) -> None:
    from codeloop.cli import approvals

    approvals.register(into)


def _acp(into: typer.Typer) -> None:
    from codeloop.cli import acp

    acp.register(into)


def _console(into: typer.Typer) -> None:
    from codeloop.cli import console

    console.register(into)


def _batch(into: typer.Typer) -> None:
    from codeloop.cli import batch

    batch.register(into)


COMMANDS: dict[str, Callable[[typer.Typer], None]] = {
    "tool": _tool, "apply-patch": _tool, "run": _run, "relay": _relay, "spaces": _spaces,
    "index": _index, "codali": _codali,
    "sessions": _sessions, "rewind": _sessions, "undo": _sessions, "redo": _sessions,
    "trust": _trust, "worktrees": _worktrees, "approvals": _approvals, "acp": _acp, "console": _console,
    "batch": _batch,
}
"""Each top-level command and the function that registers it (with its module's other commands).
Imports are explicit (no plugin strings) so "what runs here?" has one answer; the order is the
root help's. ``tests/cli/test_app_commands.py`` fails when a module registers a name not here."""


def register(command: str | None = None) -> None:
    """Register ``command``'s module only (its imports alone: ``codeloop run`` pulls in the model
    clients, which ``codeloop tool`` or ``codeloop spaces`` do not need, and a CLI call paid
    for all of them), or every module when ``command`` is not one of :data:`COMMANDS`."""
    chosen = COMMANDS.get(command) if command is not None else None
    for registrar in [chosen] if chosen is not None else dict.fromkeys(COMMANDS.values()):
        registrar(app)


def run_app() -> None:
    """Build the command tree the arguments need and run it on ``sys.argv``."""
    import sys

    from codeloop.cli.worktrees import bare_worktree_option

    args = bare_worktree_option(sys.argv[1:])
    register(args[0] if args else None)
    app(args=args)
