"""``codeloop worktrees list|merge|remove``: the git worktrees of ``codeloop run --worktree``
(:mod:`codeloop.environments.worktrees`; docs/cli.md, "Git worktrees")."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from codeloop.cli.errors import fail
from codeloop.cli.model_choice import UsageError

if TYPE_CHECKING:
    from rich.console import Console

T = TypeVar("T")
CWD = typer.Option(Path("."), "--cwd", help="A directory of the repository (default: the current one).")


def _run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a worktree operation; its WorktreeError is one line on stderr and exit code 1."""
    import asyncio

    from codeloop.environments.worktrees import WorktreeError

    try:
        return asyncio.run(make())
    except WorktreeError as exc:
        raise fail(str(exc)) from None


def bare_worktree_option(args: list[str]) -> list[str]:
    """``codeloop run ... --worktree`` with no NAME (last, or before another option) as
    ``--worktree=``: click would take the next option itself for the name."""
    if not args or args[0] != "run":
        return args
    return [f"{arg}=" if arg == "--worktree" and (i + 1 == len(args) or args[i + 1].startswith("-")) else arg
            for i, arg in enumerate(args)]


def start_worktree(root: Path, name: str, resume_id: str | None, err: Console) -> Path:
    """``--worktree [NAME]``: create the worktree and return it as the workspace."""
    import asyncio

    from codeloop.environments.worktrees import WorktreeError, create

    if resume_id is not None:
        raise UsageError("--worktree starts a new worktree, so it cannot resume a session: leave out "
                         "--resume/--continue, or run with --cwd set to the existing worktree")
    try:
        made = asyncio.run(create(root, name or None))
    except WorktreeError as exc:
        raise UsageError(f"--worktree: {exc}") from None
    err.print(f"worktree {made.name} at {made.path} on branch {made.branch} (then: codeloop worktrees merge "
              f"{made.name}, or remove {made.name})", highlight=False, markup=False)
    return made.path


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
