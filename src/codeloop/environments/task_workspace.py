"""A batch task's workspace (issue 39): made from its source, and its patch against the start.

A task's workspace comes from a directory (copied), a git repository at a revision (cloned
from a local path or a URL, then checked out detached), or nothing (an empty directory).
Its starting state is recorded in a *baseline* repository kept beside the workspace, never
inside it (the agent sees only the task's files, and a cloned repository keeps its own
``.git`` untouched): :func:`workspace_patch` is ``git diff --binary`` of the workspace
against that start, whatever the source was, and :func:`apply_patch` replays such a patch
on a freshly made workspace (a task retried on another Ray node, docs/scale.md).

Git runs through the one process runner. The baseline's git is isolated from every user
setting (as the snapshot store's is); the clone of a user's repository is not, since it may
need the user's credentials for a URL.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from codeloop.environments.atomic import atomic_write
from codeloop.environments.base import ExecLimits
from codeloop.environments.runner import run_process

GIT_TIMEOUT_MS = 600_000
"""A clone of a large repository may take minutes; nothing here waits longer."""
_PREPARED = "prepared"
"""Written (atomically) once the workspace and its baseline are complete."""


class TaskWorkspaceError(Exception):
    """The workspace could not be made or read; the message names the source and git's words."""


@dataclass(frozen=True)
class WorkspaceSource:
    """Where a task's workspace comes from: exactly one of ``directory`` or ``git``, or neither
    (an empty workspace)."""

    directory: Path | None = None
    """A directory copied as it is (links kept as links)."""
    git: str | None = None
    """A repository to clone: a local path or a URL."""
    revision: str | None = None
    """The revision checked out (detached) after cloning; None: the default branch's head."""


@dataclass(frozen=True)
class TaskDirs:
    """The directories of one task under a work directory: stable across restarts, so a task
    cut midway finds its workspace and its session log again."""

    root: Path
    """``<work dir>/<task id>``."""

    @property
    def workspace(self) -> Path:
        """The agent's workspace."""
        return self.root / "workspace"

    @property
    def baseline(self) -> Path:
        """The git directory holding the workspace's starting state."""
        return self.root / "baseline.git"

    @property
    def state(self) -> Path:
        """The task's ``CODELOOP_STATE_DIR``: its session log, approvals and snapshots."""
        return self.root / "state"

    @property
    def prepared(self) -> bool:
        """True when the workspace was made completely (a restart keeps it as it is)."""
        return (self.root / _PREPARED).is_file()


def _isolated_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_AUTHOR_NAME="codeloop",
               GIT_AUTHOR_EMAIL="codeloop@localhost", GIT_COMMITTER_NAME="codeloop",
               GIT_COMMITTER_EMAIL="codeloop@localhost")
    return env


async def _git(cwd: Path, args: list[str], env: dict[str, str], what: str) -> str:
    result = await run_process(["git", *args], cwd=cwd, env=env, timeout_ms=GIT_TIMEOUT_MS,
                               limits=ExecLimits(max_timeout_ms=GIT_TIMEOUT_MS), keep_full_output=False)
    if not result.started:
        raise TaskWorkspaceError(f"{what}: git could not run: {result.stderr.strip()} (install git)")
    if result.timed_out or result.exit_code != 0:
        words = (result.stdout + result.stderr).strip().splitlines()
        raise TaskWorkspaceError(f"{what}: git {args[0]} failed: {words[-1] if words else f'exit {result.exit_code}'}")
    return result.stdout


async def _baseline(dirs: TaskDirs, args: list[str], what: str) -> str:
    base = ["--git-dir", str(dirs.baseline), "--work-tree", str(dirs.workspace), "-c", "core.hooksPath=/dev/null",
            "-c", "core.autocrlf=false", "-c", "commit.gpgsign=false"]
    return await _git(dirs.workspace, [*base, *args], _isolated_env(), what)


async def prepare_workspace(dirs: TaskDirs, source: WorkspaceSource) -> None:
    """Make ``dirs.workspace`` from ``source`` and record its start, unless a complete one
    exists (a restart). A half-made one (killed while copying or cloning) is made again."""
    if dirs.prepared:
        return
    for leftover in (dirs.workspace, dirs.baseline):
        if leftover.exists():
            shutil.rmtree(leftover)
    dirs.root.mkdir(parents=True, exist_ok=True)
    if source.directory is not None:
        try:
            shutil.copytree(source.directory, dirs.workspace, symlinks=True)
        except (OSError, shutil.Error) as exc:
            raise TaskWorkspaceError(f"copying {source.directory}: {exc}") from None
    elif source.git is not None:
        what = f"cloning {source.git}"
        await _git(dirs.root, ["clone", "--quiet", "--no-checkout", "--", source.git, str(dirs.workspace)],
                   dict(os.environ), what)
        await _git(dirs.workspace, ["checkout", "--quiet", "--detach", source.revision or "HEAD", "--"],
                   dict(os.environ), f"{what} at {source.revision or 'HEAD'}")
    else:
        dirs.workspace.mkdir()
    await _baseline(dirs, ["init", "--quiet"], "recording the start")
    await _baseline(dirs, ["add", "--all", "--force"], "recording the start")
    await _baseline(dirs, ["commit", "--quiet", "--allow-empty", "--no-verify", "-m", "start"], "recording the start")
    atomic_write(dirs.root / _PREPARED, b"ok\n")


async def workspace_patch(dirs: TaskDirs) -> str:
    """The workspace's changes since its start (``git diff --binary``; empty when none)."""
    out = dirs.root / "patch.tmp"
    await _baseline(dirs, ["add", "--all", "--force"], "reading the patch")
    await _baseline(dirs, ["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", f"--output={out}", "HEAD"],
                    "reading the patch")
    try:
        return out.read_text("utf-8", errors="replace")
    finally:
        out.unlink(missing_ok=True)


async def apply_patch(dirs: TaskDirs, patch: str) -> None:
    """Replay ``patch`` (from :func:`workspace_patch`) on a freshly prepared workspace."""
    if not patch:
        return
    path = dirs.root / "replay.patch"
    path.write_text(patch, "utf-8")
    try:
        await _baseline(dirs, ["apply", "--binary", "--whitespace=nowarn", str(path)], "replaying the patch")
    finally:
        path.unlink(missing_ok=True)
