"""The one error line the ``codeloop`` commands print before they exit (docs/cli.md)."""

from __future__ import annotations

import typer


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: MESSAGE`` on stderr; returns the exit to raise (status ``code``)."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)
