"""``ScratchExecutionEnvironment``: the workspace seen through a bubblewrap overlay, for trying a
candidate change without touching the user's files (issue 33).

Commands run as in the ``workspace-write`` sandbox, except that the workspace is an overlay
(``bwrap --overlay-src WORKSPACE --overlay UPPER WORK WORKSPACE``): they read the user's files
with the candidate's on top, and everything they write (the candidate's files staged with
:meth:`~ScratchExecutionEnvironment.stage`, a test's cache, a deleted file's whiteout) lands in a
private upper directory, removed by ``cleanup()``. Not a copy: only what changes is stored. A
linked worktree's git directory is mounted read-only.

The file tools of this environment refuse every write (``WriteDeniedError``): a candidate's
files go in through ``stage``, whose paths are judged by the one resolver against the workspace
and written beneath the upper directory. Reads through the file tools see the user's files, not
the overlay; what a check needs to see it reads with a command.

Needs bubblewrap 0.10 or later (``--overlay``); ``initialize()`` raises
``SandboxUnavailableError`` saying so on an older one.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from codeloop.environments.base import EnvPolicy, ExecLimits
from codeloop.environments.errors import SandboxUnavailableError, WorkspaceError, WriteDeniedError
from codeloop.environments.safe_open import atomic_write_beneath
from codeloop.environments.sandbox import (
    DEFAULT_HIDDEN_PATHS,
    SandboxedExecutionEnvironment,
    supports_overlay,
)
from codeloop.environments.worktrees import git_mounts


class ScratchExecutionEnvironment(SandboxedExecutionEnvironment):
    """A throwaway overlay of ``root``; network off unless asked.

    Example::

        env = ScratchExecutionEnvironment("/work/repo")
        await env.initialize()                       # SandboxUnavailableError without overlay support
        await env.stage({"stats.py": "...", "old.py": None})
        await env.exec_command("python3 test_stats.py")
        await env.cleanup()                          # the staged files and what commands wrote go
    """

    def __init__(self, root: str | Path, *, network: bool = False,
                 hidden_paths: Sequence[str] = DEFAULT_HIDDEN_PATHS, limits: ExecLimits | None = None,
                 env_policy: EnvPolicy = "inherit-all", shell: str = "/bin/bash") -> None:
        super().__init__(root, mode="workspace-write", network=network, hidden_paths=hidden_paths,
                         limits=limits, env_policy=env_policy, shell=shell)
        self._checked = False  # even without network the overlay needs bwrap
        self._scratch = Path(tempfile.mkdtemp(prefix="codeloop-scratch-"))
        self.upper = self._scratch / "upper"
        """Where the candidate's files and the commands' writes land."""
        self._work = self._scratch / "work"
        self.upper.mkdir()
        self._work.mkdir()

    def _ensure_sandbox(self) -> None:
        if self._checked:
            return
        super()._ensure_sandbox()
        assert self._bwrap is not None
        if not supports_overlay(self._bwrap):
            self._checked = False
            raise SandboxUnavailableError(
                f"a scratch workspace needs bubblewrap 0.10 or later (its --overlay); {self._bwrap} has no "
                "--overlay: install a newer bubblewrap")

    def build_argv(self, command: str) -> list[str]:
        # Always the overlay sandbox: "full" mode never applies here.
        return super().build_argv(command)

    def _workspace_mounts(self, workspace: str) -> list[str]:
        return ["--overlay-src", workspace, "--overlay", str(self.upper), str(self._work), workspace,
                *git_mounts(workspace, False)]

    def check_write(self, path: str) -> None:
        raise WriteDeniedError(f"Cannot write {path!r} here: a scratch workspace takes a candidate's files "
                               "through stage(), never through the file tools", path=path)

    async def stage(self, changes: Mapping[str, str | None]) -> None:
        """Put a candidate's files in the overlay: ``path → text`` written, ``path → None`` deleted
        (inside the sandbox, so the overlay records it). Paths are judged against the workspace
        (``PathOutsideWorkspaceError`` for one outside)."""
        root = self._real_root()
        doomed = []
        for path, text in changes.items():
            below = self.resolve(path).relative_to(root)  # the one resolver judges it
            if text is None:
                doomed.append(str(below))
                continue
            target = self.upper / below
            await asyncio.to_thread(atomic_write_beneath, self.upper, target, text.encode("utf-8"), path)
        if doomed:
            done = await self.exec_command("rm -f -- " + " ".join(map(shlex.quote, doomed)))
            if done.exit_code != 0:
                raise WorkspaceError(f"could not delete {', '.join(doomed)} in the scratch workspace: "
                                     f"{done.stderr.strip() or done.stdout.strip()}")

    async def cleanup(self) -> None:
        try:
            await super().cleanup()
        finally:
            # overlayfs leaves its work directory without permissions: open it up to remove it.
            for directory, subdirs, _files in os.walk(self._scratch):
                for name in subdirs:
                    try:
                        os.chmod(os.path.join(directory, name), 0o700)
                    except OSError:
                        pass
            shutil.rmtree(self._scratch, ignore_errors=True)
