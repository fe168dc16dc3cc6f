"""The ``codeloop`` Typer app: one sub-app or command per face.

Each face's commands live in their own module (``cli/tool.py``, ``cli/relay.py``, ...)
and register themselves here; this module only wires them together. The console script
enters through :mod:`codeloop.cli.main`.
"""

from __future__ import annotations

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


def register() -> None:
    # Imports are explicit (no plugin strings) so "what runs here?" has one answer.
    from codeloop.cli import (
        acp,
        approvals,
        batch,
        codali,
        console,
        index,
        relay,
        run,
        sessions,
        spaces,
        tool,
        trust,
        worktrees,
    )

    tool.register(app)
    run.register(app)
    relay.register(app)
    spaces.register(app)
    index.register(app)
    codali.register(app)
    sessions.register(app)
    trust.register(app)
    worktrees.register(app)
    approvals.register(app)
    acp.register(app)
    console.register(app)
    batch.register(app)


def run_app() -> None:
    """Build the whole command tree and run it on ``sys.argv``."""
    import sys

    from codeloop.cli.worktrees import bare_worktree_option

    register()
    app(args=bare_worktree_option(sys.argv[1:]))
