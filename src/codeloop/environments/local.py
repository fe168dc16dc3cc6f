"""``LocalExecutionEnvironment``: tools run on this machine (loop spec §4.2).

Every path goes through :func:`~codeloop.environments.resolver.resolve_workspace_path`,
every write through :func:`~codeloop.environments.safe_open.atomic_write_beneath`, every command
through :func:`~codeloop.environments.runner.run_process`. Two hooks let a subclass
(``SandboxedExecutionEnvironment``) change behaviour without copying it:
``build_argv`` (how a command line becomes a process) and ``check_write`` (called before
every write or delete, may raise ``WriteDeniedError``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
import platform as _platform
import signal
import stat as _stat
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from codeloop.environments import search
from codeloop.environments.base import (
    DirEntry,
    EnvPolicy,
    ExecLimits,
    ExecResult,
    FileStat,
    GrepOptions,
    OutputCallback,
)
from codeloop.environments.envfilter import Redactor, filter_environment
from codeloop.environments.errors import (
    BinaryFileError,
    DecodeError,
    FileNotFoundInWorkspaceError,
    IsAFileError,
    NotAFileError,
    PathOutsideWorkspaceError,
    PermissionDeniedError,
    WorkspaceError,
)
from codeloop.environments.patterns import workspace_glob_pattern
from codeloop.environments.resolver import check_path_syntax, relative_to_root, resolve_workspace_path
from codeloop.environments.runner import Job, run_process, signal_process_group, start_job
from codeloop.environments.safe_open import atomic_write_beneath, read_bytes_beneath, unlink_beneath

BINARY_SNIFF_BYTES = 8192
"""A NUL byte within this many leading bytes makes a file binary."""


def _os_error(exc: OSError, path: str, action: str) -> WorkspaceError:
    """Translate an ``OSError`` into the ``WorkspaceError`` tree with a message naming ``path``."""
    if isinstance(exc, PermissionError):
        return PermissionDeniedError(
            f"Permission denied: cannot {action} {path!r}; check the file's permissions", path=path
        )
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundInWorkspaceError(f"No such file or directory: {path!r}", path=path)
    if isinstance(exc, IsADirectoryError):
        return NotAFileError(f"{path!r} is a directory, not a file; list it with list_directory", path=path)
    if isinstance(exc, NotADirectoryError | FileExistsError):
        return IsAFileError(f"Cannot {action} {path!r}: a parent of it is a file, not a directory", path=path)
    if exc.errno == errno.ENOSPC:
        return WorkspaceError(f"Cannot {action} {path!r}: no space left on device (the file is unchanged; "
                              "free some space, then try again)", path=path)
    return WorkspaceError(f"Cannot {action} {path!r}: {exc.strerror or exc}", path=path)


def decode_text(data: bytes, path: str) -> str:
    """Decode a file's bytes as UTF-8 text, or raise BinaryFileError / DecodeError naming ``path``."""
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise BinaryFileError(
            f"{path!r} is a binary file (it contains NUL bytes); it cannot be read as text", path=path
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DecodeError(
            f"{path!r} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}, line {line}); "
            "it may be binary or use another encoding",
            path=path,
        ) from None


def slice_lines(text: str, offset: int | None, limit: int | None) -> str:
    """Lines ``offset`` (1-based) to ``offset + limit - 1`` of ``text``, endings kept."""
    if offset is None and limit is None:
        return text
    # Lines end at "\n" only (not at the other separators str.splitlines knows), so line
    # numbers agree with editors, grep and the read_file tool's "NNN | content".
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    first = max(offset or 1, 1) - 1
    last = len(lines) if limit is None else min(len(lines), first + max(limit, 0))
    if first >= last:
        return ""
    chunk = "\n".join(lines[first:last])
    return chunk + "\n" if last < len(lines) or text.endswith("\n") else chunk


class LocalExecutionEnvironment:
    """Runs tools on the local machine inside the workspace ``root`` (loop spec §4.2).

    Example::

        env = LocalExecutionEnvironment("/work/repo")
        await env.initialize()
        result = await env.exec_command("pytest -q", timeout_ms=60_000)
        print(result.exit_code, result.output)

    ``limits`` sets timeouts and output caps (§5.4); ``env_policy`` and ``env_allow`` which
    host variables a command sees (§4.2, ``envfilter``); ``shell`` the program given
    ``-c COMMAND``. The values of the host's secret variables are redacted from command
    output (``ExecResult`` and ``on_output``) as ``[REDACTED:NAME]``.
    """

    def __init__(self, root: str | Path, *, limits: ExecLimits | None = None,
                 env_policy: EnvPolicy = "inherit-all", shell: str = "/bin/bash",
                 env_allow: Sequence[str] = ()) -> None:
        self.root = Path(os.path.abspath(root))
        self.limits = limits if limits is not None else ExecLimits()
        self.env_policy: EnvPolicy = env_policy
        self.env_allow = tuple(env_allow)
        """Host variables passed whatever their names (and, under ``allowlist``, name patterns)."""
        self.shell = shell
        self.ripgrep: str | None = search.find_rg()
        """The ``rg`` used by grep and glob; set to ``None`` to use the pure-Python fallback."""
        self._running: set[int] = set()
        self._env_cache: dict[str, str] | None = None
        self._env_source: tuple[str, tuple[str, ...], dict[bytes, bytes]] | None = None
        self._redact = Redactor({})
        self.allow_hardlinks = False
        """Read files that have several hard links (one of which may lie outside the
        workspace); off by default, see ``codeloop.environments.safe_open``."""

    # Hooks for subclasses -----------------------------------------------------------

    def build_argv(self, command: str) -> list[str]:
        """The process to start for ``command``: ``[shell, "-c", command]``."""
        return [self.shell, "-c", command]

    def check_write(self, path: str) -> None:
        """Called with the workspace path before every write or delete; raise
        ``WriteDeniedError`` to refuse. The default allows everything."""

    def command_environment(self, env_vars: dict[str, str] | None) -> dict[str, str]:
        """The environment of a command: the host's, filtered by ``env_policy``, plus ``env_vars``."""
        # Filtering os.environ costs as much as the rest of a command's overhead; redo it
        # only when the process environment changed (compared as raw bytes, in C).
        source: dict[bytes, bytes] | None = getattr(os.environ, "_data", None)
        key = (self.env_policy, self.env_allow, source)
        if self._env_cache is None or source is None or key != self._env_source:
            self._env_cache = filter_environment(os.environ, self.env_policy, self.env_allow)
            self._redact = Redactor.for_environment(os.environ, self.env_allow)
            self._env_source = (self.env_policy, self.env_allow, dict(source)) if source is not None else None
        env = dict(self._env_cache)
        if env_vars:
            env.update(env_vars)
        return env

    # Paths -----------------------------------------------------------------------------

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """The canonical absolute path of a workspace path (see ``resolve_workspace_path``)."""
        return resolve_workspace_path(self.root, path, must_exist=must_exist)

    # File operations ---------------------------------------------------------------------

    async def read_bytes(self, path: str) -> bytes:
        target = self.resolve(path, must_exist=True)
        if target.is_dir():
            raise NotAFileError(f"{path!r} is a directory, not a file; list it with list_directory", path=path)
        try:
            return await asyncio.to_thread(read_bytes_beneath, self._real_root(), target, path,
                                           allow_hardlinks=self.allow_hardlinks)
        except OSError as exc:
            raise _os_error(exc, path, "read") from None

    async def read_file(self, path: str, offset: int | None = None, limit: int | None = None) -> str:
        return slice_lines(decode_text(await self.read_bytes(path), path), offset, limit)

    async def write_file(self, path: str, content: str | bytes) -> int:
        target = self.resolve(path)
        self.check_write(path)
        if isinstance(content, str):
            try:
                data = content.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise WorkspaceError(
                    f"Cannot write {path!r}: the content has characters that are not valid UTF-8 ({exc.reason})",
                    path=path,
                ) from None
        else:
            data = content
        if target.is_dir():
            raise NotAFileError(f"Cannot write {path!r}: it is a directory", path=path)
        try:
            await asyncio.to_thread(atomic_write_beneath, self._real_root(), target, data, path)
        except OSError as exc:
            raise _os_error(exc, path, "write") from None
        return len(data)

    async def delete_file(self, path: str) -> None:
        target = self._entry(path)
        self.check_write(path)
        if target.is_dir() and not target.is_symlink():
            raise NotAFileError(f"Cannot delete {path!r}: it is a directory", path=path)
        try:
            await asyncio.to_thread(unlink_beneath, self._real_root(), target, path)
        except OSError as exc:
            raise _os_error(exc, path, "delete") from None

    def _entry(self, path: str) -> Path:
        """The path itself, not the target of a symlink at it (deleting a link removes the link)."""
        check_path_syntax(path)
        parent, _, name = path.rstrip("/").rpartition("/")
        if name in ("", ".", ".."):
            return self.resolve(path, must_exist=True)
        target = self.resolve(parent or ".") / name
        if not os.path.lexists(target):
            raise FileNotFoundInWorkspaceError(f"No such file or directory: {path!r}", path=path)
        return target

    async def file_exists(self, path: str) -> bool:
        try:
            return self.resolve(path).exists()
        except PathOutsideWorkspaceError:
            return False

    async def stat(self, path: str) -> FileStat:
        target = self.resolve(path, must_exist=True)
        try:
            info = await asyncio.to_thread(target.stat)
        except OSError as exc:
            raise _os_error(exc, path, "stat") from None
        return FileStat(path=relative_to_root(self.root, target), is_dir=_stat.S_ISDIR(info.st_mode),
                        size=info.st_size, mtime=info.st_mtime)

    async def list_directory(self, path: str = ".", depth: int = 1) -> list[DirEntry]:
        target = self.resolve(path, must_exist=True)
        if not target.is_dir():
            raise IsAFileError(f"{path!r} is a file, not a directory; read it with read_file", path=path)
        entries = await asyncio.to_thread(lambda: list(_scan(str(target), "", max(depth, 1))))
        return sorted(entries, key=lambda e: e.name.split("/"))

    # Commands ----------------------------------------------------------------------------

    async def exec_command(self, command: str, timeout_ms: int | None = None, working_dir: str | None = None,
                           env_vars: dict[str, str] | None = None,
                           on_output: OutputCallback | None = None) -> ExecResult:
        timeout = self.limits.default_timeout_ms if timeout_ms is None or timeout_ms <= 0 else timeout_ms
        timeout = min(timeout, self.limits.max_timeout_ms)
        cwd = self.resolve(working_dir or ".", must_exist=True)
        if not cwd.is_dir():
            raise IsAFileError(f"Working directory {working_dir!r} is a file, not a directory", path=working_dir)
        env = self.command_environment(env_vars)
        redact = self._redact
        if redact and on_output is not None:
            # Per chunk: a value split across two chunks is caught in the result only.
            shown = on_output
            on_output = lambda stream, text: shown(stream, redact(text))  # noqa: E731
        result = await run_process(self.build_argv(command), cwd=cwd, env=env, timeout_ms=timeout,
                                   limits=self.limits, on_output=on_output, running=self._running)
        if not redact:
            return result
        return dataclasses.replace(result, stdout=redact(result.stdout), stderr=redact(result.stderr))

    def start_job(self, command: str, working_dir: str | None = None) -> Job:
        """Start ``command`` in the background as :meth:`exec_command` would run it (same
        shell, sandbox, filtered environment); raises OSError when it cannot start."""
        cwd = self.resolve(working_dir or ".", must_exist=True)
        if not cwd.is_dir():
            raise IsAFileError(f"Working directory {working_dir!r} is a file, not a directory", path=working_dir)
        return start_job(self.build_argv(command), cwd=cwd, env=self.command_environment(None), limits=self.limits)

    def redact(self, text: str) -> str:
        """``text`` with the values of secret environment variables masked (as command output is)."""
        return self._redact(text) if self._redact else text

    # Search ------------------------------------------------------------------------------

    def _search_start(self, path: str, *, directory: bool = False) -> str:
        target = self.resolve(path, must_exist=True)
        if directory and not target.is_dir():
            raise IsAFileError(f"{path!r} is a file, not a directory; glob searches below a directory", path=path)
        return relative_to_root(self.root, target)

    async def grep(self, pattern: str, path: str = ".", options: GrepOptions | None = None) -> str:
        return await search.grep(str(self._real_root()), self._search_start(path), pattern,
                                 options or GrepOptions(), self.ripgrep, allow_hardlinks=self.allow_hardlinks)

    async def glob(self, pattern: str, path: str = ".") -> list[str]:
        start = self._search_start(path, directory=True)
        # Glob patterns are relative; an absolute one must lie inside the workspace.
        pattern = workspace_glob_pattern(pattern, (str(self._real_root()), str(self.root)))
        return await search.glob(str(self._real_root()), start, pattern, self.ripgrep)

    def _real_root(self) -> Path:
        return self.resolve(".")

    # Lifecycle and metadata ----------------------------------------------------------------

    async def initialize(self) -> None:
        """Create the workspace directory if it does not exist."""
        self.root.mkdir(parents=True, exist_ok=True)

    async def cleanup(self) -> None:
        """Stop every command still running as Appendix B orders: SIGTERM to each process
        group, up to ``limits.kill_grace_ms`` for them to end, SIGKILL to what remains."""
        if not self._running:
            return
        groups = list(self._running)
        for pgid in groups:
            signal_process_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + self.limits.kill_grace_ms / 1000
        # The set shrinks as each command's run_process returns, in other tasks.
        while self._running.intersection(groups) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        for pgid in groups:
            signal_process_group(pgid, signal.SIGKILL)

    def working_directory(self) -> str:
        return os.path.realpath(self.root)

    def platform(self) -> str:
        return {"Linux": "linux", "Darwin": "darwin", "Windows": "windows"}.get(_platform.system(), "linux")

    def os_version(self) -> str:
        return f"{_platform.system()} {_platform.release()}"


def _scan(abs_dir: str, prefix: str, depth: int) -> Iterator[DirEntry]:
    """Entries below ``abs_dir`` down to ``depth`` levels; symlinked directories are listed
    but not entered, so a listing never leaves the workspace."""
    try:
        entries = list(os.scandir(abs_dir))
    except OSError:
        return
    for entry in entries:
        name = prefix + entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            size = None if is_dir else entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
        yield DirEntry(name=name, is_dir=is_dir, size=size)
        if is_dir and depth > 1:
            yield from _scan(entry.path, name + "/", depth - 1)
