"""The ``codeloop`` Typer app: one sub-app or command per face.

Each face's commands live in their own module (``cli/tool.py``, ``cli/relay.py``, ...)
and register themselves here; this module only wires them together. The console script
enters through :mod:`codeloop.cli.main`.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="codeloop",
    help="codeloop: a coding-agent engine. Example: codeloop run \"add a --verbose flag to cli.py\"",
    no_args_is_help=True,
    rich_markup_mode=None,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def version() -> None:
    """Print the codeloop version. Example: codeloop version"""
    from importlib.metadata import version as _v

    typer.echo(_v("codeloop"))


def register() -> None:
    # Imports are explicit (no plugin strings) so "what runs here?" has one answer.
    from codeloop.cli import codali, index, relay, run, sessions, spaces, tool, trust, worktrees

    tool.register(app)
    run.register(app)
    relay.register(app)
    spaces.register(app)
    index.register(app)
    codali.register(app)
    sessions.register(app)
    trust.register(app)
    worktrees.register(app)


def run_app() -> None:
    """Build the whole command tree and run it on ``sys.argv``."""
    import sys

    from codeloop.cli.worktrees import bare_worktree_option

    register()
    app(args=bare_worktree_option(sys.argv[1:]))
