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


COPY_LIMIT_BYTES = 64 * 1024 * 1024
"""The largest workspace :class:`CopiedScratchEnvironment` copies (bytes of the files copied)."""
COPY_LIMIT_FILES = 20_000
"""The most files it copies."""
NOT_COPIED = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
                        ".pytest_cache", ".ruff_cache", ".tox", ".codeloop"})
"""Directories a check does not need (version control, caches, installed environments)."""


def copy_workspace(root: Path, into: Path) -> None:
    """Copy the files of ``root`` into ``into`` (regular files and directories only: a
    symbolic link is not followed nor copied), leaving out :data:`NOT_COPIED`;
    ``WorkspaceError`` past :data:`COPY_LIMIT_BYTES` or :data:`COPY_LIMIT_FILES`."""
    total = files = 0
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in NOT_COPIED
                            and not os.path.islink(os.path.join(directory, d)))
        target = into / os.path.relpath(directory, root)
        target.mkdir(parents=True, exist_ok=True)
        for name in names:
            source = os.path.join(directory, name)
            if os.path.islink(source) or not os.path.isfile(source):
                continue
            total += os.path.getsize(source)
            files += 1
            if total > COPY_LIMIT_BYTES or files > COPY_LIMIT_FILES:
                raise WorkspaceError(f"the workspace is too large to copy for checks (over "
                                     f"{COPY_LIMIT_BYTES // 2**20} MiB or {COPY_LIMIT_FILES} files)")
            shutil.copyfile(source, target / name)
            shutil.copymode(source, target / name)


class CopiedScratchEnvironment(SandboxedExecutionEnvironment):
    """The fallback of :class:`ScratchExecutionEnvironment` where bubblewrap has no overlay
    (bubblewrap before 0.10, as on Debian 12): a plain temporary copy of the workspace
    (:func:`copy_workspace`: no version control directories, caches or installed
    environments; at most :data:`COPY_LIMIT_BYTES`), not hard links, so that a command
    writing a file in place cannot reach the user's. Commands run in the ``workspace-write``
    sandbox over the copy, network off unless asked; ``stage`` writes the candidate's files
    there; ``cleanup()`` removes the copy. Needs bubblewrap (any version the sandbox takes),
    unless ``sandboxed=False``: where no sandbox runs at all, the copy with commands run as the
    user, unsandboxed and with the network (only for a caller whose policy asks the user first,
    as the small-model strategy's checks do)."""

    def __init__(self, root: str | Path, *, network: bool = False,
                 hidden_paths: Sequence[str] = DEFAULT_HIDDEN_PATHS, limits: ExecLimits | None = None,
                 env_policy: EnvPolicy = "inherit-all", shell: str = "/bin/bash", sandboxed: bool = True) -> None:
        self.source = Path(root).resolve()
        """The user's workspace, copied from (never written)."""
        self._scratch = Path(tempfile.mkdtemp(prefix="codeloop-scratch-copy-"))
        self.copy = self._scratch / self.source.name
        """Where the copy lives; the root of this environment."""
        self.copy.mkdir()
        # Sandbox mode "off" with the network on is the one mode that needs no bubblewrap.
        super().__init__(self.copy, mode="workspace-write" if sandboxed else "off", network=network or not sandboxed,
                         hidden_paths=hidden_paths, limits=limits, env_policy=env_policy, shell=shell)

    async def initialize(self) -> None:
        if not self.source.is_dir():  # a remote workspace (SSH): nothing here to copy
            raise WorkspaceError(f"{self.source} is not a directory on this machine: no copy for checks")
        try:
            await asyncio.to_thread(copy_workspace, self.source, self.copy)
        except OSError as exc:
            raise WorkspaceError(f"could not copy the workspace for checks: {exc}") from exc
        await super().initialize()

    async def stage(self, changes: Mapping[str, str | None]) -> None:
        """Write a candidate's files into the copy (``None``: deleted); paths judged by the resolver."""
        root = self._real_root()
        for path, text in changes.items():
            target = self.resolve(path)
            below = target.relative_to(root)
            if text is None:
                await asyncio.to_thread(target.unlink, missing_ok=True)
                continue
            await asyncio.to_thread(atomic_write_beneath, root, root / below, text.encode("utf-8"), path)

    async def cleanup(self) -> None:
        try:
            await super().cleanup()
        finally:
            shutil.rmtree(self._scratch, ignore_errors=True)


def open_scratch(root: str | Path, *, network: bool = False) -> ScratchExecutionEnvironment | CopiedScratchEnvironment:
    """A scratch workspace of ``root``: the overlay where bubblewrap has ``--overlay``, else
    the copy (not initialized yet: the caller awaits ``initialize()``, which raises
    ``SandboxUnavailableError`` where no sandbox runs at all)."""
    bwrap = shutil.which("bwrap")
    if bwrap is not None and supports_overlay(bwrap):
        return ScratchExecutionEnvironment(root, network=network)
    return CopiedScratchEnvironment(root, network=network)
