"""``codeloop worktrees list|merge|remove``: the git worktrees of ``codeloop run --worktree``
(:mod:`codeloop.environments.worktrees`; docs/cli.md, "Git worktrees")."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import typer

T = TypeVar("T")
CWD = typer.Option(Path("."), "--cwd", help="A directory of the repository (default: the current one).")


def _run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a worktree operation; its WorktreeError is one line on stderr and exit code 1."""
    import asyncio

    from codeloop.environments.worktrees import WorktreeError

    try:
        return asyncio.run(make())
    except WorktreeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def register(app: typer.Typer) -> None:
    """Add ``codeloop worktrees``."""
    from codeloop.environments import worktrees as wt

    group = typer.Typer(help="Git worktrees of codeloop run --worktree: list, merge, remove. "
                             "Example: codeloop worktrees merge fix-login", no_args_is_help=True)
    app.add_typer(group, name="worktrees")

    @group.command("list")
    def list_command(cwd: Path = CWD) -> None:
        """List the worktrees on codeloop/ branches: name, branch, state, path.

        Example: codeloop worktrees list
        """
        root = cwd.resolve()

        async def listing() -> list[str]:
            return [f"{w.name}\t{w.branch}\t{'uncommitted changes' if await wt.uncommitted(w) else 'clean'}"
                    f"\t{w.path}" for w in await wt.list_worktrees(root)]

        lines = _run(listing)
        typer.echo("\n".join(lines) if lines else "no codeloop worktrees (start one: codeloop run --worktree)")

    @group.command("merge")
    def merge_command(name: str = typer.Argument(..., help="The worktree's name."), cwd: Path = CWD) -> None:
        """Merge the worktree's branch codeloop/NAME into the current branch of the main checkout.
        On conflicts nothing changes and the conflicting files are named.

        Example: codeloop worktrees merge fix-login
        """
        typer.echo(_run(lambda: wt.merge(cwd.resolve(), name)))

    @group.command("remove")
    def remove_command(name: str = typer.Argument(..., help="The worktree's name."), cwd: Path = CWD,
                       force: bool = typer.Option(False, "--force",
                                                  help="Discard uncommitted changes and an unmerged branch.")) -> None:
        """Remove the worktree and its branch (refused with uncommitted changes unless --force;
        an unmerged branch is kept unless --force).

        Example: codeloop worktrees remove fix-login
        """
        typer.echo(_run(lambda: wt.remove(cwd.resolve(), name, force=force)))
