"""The ``codeloop`` command: one Typer app, one sub-app or command per face.

Each face's commands live in their own module (``cli/tool.py``, ``cli/relay.py``, ...)
and register themselves here; this module only wires them together.
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


@app.callback()
def _root() -> None:
    """codeloop: a coding-agent engine. Example: codeloop run 'add a --verbose flag to cli.py'"""


@app.command()
def version() -> None:
    """Print the codeloop version. Example: codeloop version"""
    from importlib.metadata import version as _v

    typer.echo(_v("codeloop"))


def _register() -> None:
    # Imports are explicit (no plugin strings) so "what runs here?" has one answer.
    from codeloop.cli import codali, index, relay, run, sessions, spaces, tool

    tool.register(app)
    run.register(app)
    relay.register(app)
    spaces.register(app)
    index.register(app)
    codali.register(app)
    sessions.register(app)


def main() -> None:
    """Entry point of the console script."""
    _register()
    app()


if __name__ == "__main__":
    main()
