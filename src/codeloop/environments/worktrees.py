"""Git worktrees for agents working side by side on one repository (issue 21).

``codeloop run --worktree [NAME]`` runs its session in ``.codeloop/worktrees/NAME`` of the
main checkout, a git worktree on the new branch ``codeloop/NAME``; ``codeloop worktrees
list|merge|remove`` manage them. Git runs through the one process runner. The directory
is added to the repository's ``info/exclude`` so the main checkout's ``git status`` and
``git add -A`` never take a worktree for a nested repository.

:func:`git_mounts` tells the sandbox what a linked worktree needs: its ``.git`` file points
into the main repository (``.git/worktrees/NAME``), outside the workspace.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from codeloop.environments.base import ExecLimits
from codeloop.environments.runner import run_process

BRANCH_PREFIX = "codeloop/"
WORKTREES_DIR = ".codeloop/worktrees"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_GIT_TIMEOUT_MS = 120_000


class WorktreeError(Exception):
    """A worktree operation that cannot be done; the message says what and how to fix it."""


@dataclass(frozen=True)
class Worktree:
    name: str
    path: Path
    branch: str


async def git(cwd: Path, *args: str) -> tuple[int, str]:
    """``git ARGS`` in ``cwd``: exit code and output (stdout, then stderr)."""
    result = await run_process(["git", *args], cwd=cwd, env=dict(os.environ), timeout_ms=_GIT_TIMEOUT_MS,
                               limits=ExecLimits(), keep_full_output=False)
    if not result.started:
        raise WorktreeError(f"git could not run: {result.stderr} (install git)")
    return result.exit_code, (result.stdout + result.stderr).strip()


async def _git_ok(cwd: Path, *args: str) -> str:
    code, out = await git(cwd, *args)
    if code != 0:
        raise WorktreeError(f"git {' '.join(args)} failed in {cwd}: {out}")
    return out


async def main_checkout(cwd: Path) -> Path:
    """The main working tree of the repository holding ``cwd`` (also from inside a worktree)."""
    code, out = await git(cwd, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if code != 0:
        raise WorktreeError(f"{cwd} is not in a git repository ({out}): worktrees need one (git init)")
    common = Path(out.splitlines()[-1])
    if common.name != ".git":
        raise WorktreeError(f"the repository of {cwd} has no main working tree (a bare repository)")
    return common.parent


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name) or ".." in name or name.endswith((".lock", ".")):
        raise WorktreeError(f"worktree name {name!r}: use letters, digits, '.', '_' and '-' "
                            "(at most 64, starting with a letter or digit), e.g. --worktree=fix-login")
    return name


async def create(cwd: Path, name: str | None) -> Worktree:
    """A fresh worktree ``NAME`` (default: ``run-<time>``) on the new branch ``codeloop/NAME``,
    started from the main checkout's current commit."""
    top = await main_checkout(cwd)
    name = check_name(name or time.strftime("run-%Y%m%d-%H%M%S"))
    path = top / WORKTREES_DIR / name
    if path.exists():
        raise WorktreeError(f"worktree {name!r} already exists at {path}: pick another name, or "
                            f"codeloop worktrees remove {name}")
    code, _ = await git(top, "rev-parse", "--verify", "--quiet", "HEAD")
    if code != 0:
        raise WorktreeError(f"{top} has no commit yet: commit once before starting a worktree")
    common = Path(await _git_ok(top, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    exclude = common / "info" / "exclude"
    line = f"/{WORKTREES_DIR}/"
    existing = exclude.read_text() if exclude.exists() else ""
    if line not in existing.splitlines():
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a") as f:
            f.write(("" if existing.endswith("\n") or not existing else "\n") + line + "\n")
    await _git_ok(top, "worktree", "add", "-b", BRANCH_PREFIX + name, str(path))
    return Worktree(name, path, BRANCH_PREFIX + name)


async def list_worktrees(cwd: Path) -> list[Worktree]:
    """The worktrees on ``codeloop/`` branches, in git's order."""
    top = await main_checkout(cwd)
    found: list[Worktree] = []
    for block in (await _git_ok(top, "worktree", "list", "--porcelain")).split("\n\n"):
        fields = dict(line.split(" ", 1) for line in block.splitlines() if " " in line)
        branch = fields.get("branch", "").removeprefix("refs/heads/")
        if branch.startswith(BRANCH_PREFIX) and "worktree" in fields:
            found.append(Worktree(branch.removeprefix(BRANCH_PREFIX), Path(fields["worktree"]), branch))
    return found


async def find(cwd: Path, name: str) -> Worktree:
    for worktree in await list_worktrees(cwd):
        if worktree.name == name:
            return worktree
    known = ", ".join(w.name for w in await list_worktrees(cwd)) or "none"
    raise WorktreeError(f"no codeloop worktree {name!r} (worktrees: {known}); see codeloop worktrees list")


async def uncommitted(worktree: Worktree) -> str:
    """``git status --short`` of the worktree (empty when clean)."""
    return await _git_ok(worktree.path, "status", "--short")


async def merge(cwd: Path, name: str) -> str:
    """Merge ``codeloop/NAME`` into the main checkout's current branch; on conflicts the
    merge is undone and WorktreeError names the files."""
    worktree = await find(cwd, name)
    top = await main_checkout(cwd)
    code, out = await git(top, "merge", "--no-edit", worktree.branch)
    if code == 0:
        return out
    conflicted = (await git(top, "diff", "--name-only", "--diff-filter=U"))[1].split()
    if conflicted:
        await git(top, "merge", "--abort")
        raise WorktreeError(
            f"merging {worktree.branch} into {top} conflicts in {', '.join(conflicted)}; the merge was "
            f"undone and nothing changed. Merge by hand: cd {top} && git merge {worktree.branch}, "
            "then resolve the files and commit")
    raise WorktreeError(f"git merge {worktree.branch} failed in {top}: {out}")


async def remove(cwd: Path, name: str, *, force: bool) -> str:
    """Remove the worktree and its branch; refuses uncommitted changes unless ``force``.
    An unmerged branch is kept (its commits would be lost) unless ``force``."""
    worktree = await find(cwd, name)
    changes = await uncommitted(worktree)
    if changes and not force:
        raise WorktreeError(f"worktree {name!r} has uncommitted changes:\n{changes}\ncommit them "
                            f"(cd {worktree.path} && git commit -am ...) or pass --force to discard them")
    top = await main_checkout(cwd)
    await _git_ok(top, "worktree", "remove", *(["--force"] if force else []), str(worktree.path))
    code, _ = await git(top, "branch", "-D" if force else "-d", worktree.branch)
    if code != 0:
        return (f"removed {worktree.path}; branch {worktree.branch} kept: it is not merged "
                f"(codeloop worktrees merge is gone with the worktree; git merge {worktree.branch}, "
                f"or git branch -D {worktree.branch} to drop it)")
    return f"removed {worktree.path} and branch {worktree.branch}"


def git_mounts(workspace: str, writable: bool) -> list[str]:
    """bubblewrap arguments that let git work in ``workspace`` when it is a linked worktree:
    the repository's git directory read-only, and writable (``writable``) only where a
    commit writes: objects, refs, logs and the worktree's own admin directory, but for what
    points git elsewhere or holds settings there (``commondir``, ``gitdir``,
    ``config.worktree``: read-only; an absent ``config.worktree`` is covered by an empty
    file, so none can be added that the host's git would read)."""
    dot_git = os.path.join(workspace, ".git")
    try:
        with open(dot_git) as f:
            head = f.read(4096)
    except OSError:  # a directory (a main checkout, inside the workspace) or no repository
        return []
    if not head.startswith("gitdir:"):
        return []
    admin = os.path.realpath(os.path.join(workspace, head[len("gitdir:"):].strip()))
    try:
        with open(os.path.join(admin, "commondir")) as f:
            common = os.path.realpath(os.path.join(admin, f.read().strip()))
    except OSError:
        common = admin
    if not os.path.isdir(admin) or os.path.commonpath([common, workspace]) == workspace:
        return []
    args = ["--ro-bind", common, common]
    if writable:
        for inside in ("objects", "refs", "logs"):
            path = os.path.join(common, inside)
            if os.path.isdir(path):
                args += ["--bind", path, path]
        args += ["--bind", admin, admin]
        for name in ("commondir", "gitdir", "config.worktree"):
            path = os.path.join(admin, name)
            if os.path.isfile(path) and not os.path.islink(path):
                args += ["--ro-bind", path, path]
            elif name == "config.worktree" and not os.path.lexists(path):
                args += ["--ro-bind", "/dev/null", path]
    return args
