"""The execution-environment seam (loop spec §4.1).

Every file operation and every command of every face goes through an
``ExecutionEnvironment``. Implementations: ``LocalExecutionEnvironment``,
``SandboxedExecutionEnvironment`` (bubblewrap), ``SSHExecutionEnvironment``, and the
wrappers of §4.4. Consumers can implement the Protocol for their own hosts and check
it with the conformance suite in ``tests/environments/conformance.py``.

Paths given to an environment are *workspace paths*: relative to
``working_directory()``, or absolute but inside it. Anything that ends outside the
workspace raises :class:`codeloop.environments.errors.PathOutsideWorkspaceError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from codeloop.environments.runner import Job

OutputStream = Literal["stdout", "stderr"]
OutputCallback = Callable[[OutputStream, str], None]
"""Called with each chunk of command output as it arrives; must not raise."""

EnvPolicy = Literal["inherit-all", "allowlist", "core-only", "none"]
"""How much of the host environment a command inherits (loop spec §4.2, ``envfilter``)."""


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one command (loop spec §4.1)."""

    stdout: str
    """Captured stdout; when the command printed more than the memory cap, head and tail
    joined by a ``[... N bytes omitted ...]`` marker (the whole is in ``full_output_path``)."""
    stderr: str
    """Captured stderr, capped like ``stdout``."""
    exit_code: int
    """Exit status; ``-N`` when killed by signal N. Meaningless when ``started`` is False
    (it is then ``-1``, kept for callers written before ``started`` existed)."""
    timed_out: bool
    """True when the timeout fired and the process group was killed."""
    duration_ms: int
    """Wall-clock time from start to the end of output collection."""
    stdout_bytes: int = 0
    """Total bytes the command wrote to stdout (including what was not kept in memory)."""
    stderr_bytes: int = 0
    """Total bytes the command wrote to stderr."""
    full_output_path: str | None = None
    """A temporary file holding the complete interleaved output when it exceeded the memory
    cap; owned by the caller, who may delete it. ``None`` when ``stdout``/``stderr`` are whole."""
    started: bool = True
    """False when the process could not be started (no such shell, bad working directory);
    the reason is in ``stderr``. Callers ask this, never ``exit_code``: a process killed by
    SIGHUP also ends with ``-1``."""

    @property
    def output(self) -> str:
        """stdout and stderr combined, as shown to a model."""
        if self.stdout and self.stderr:
            sep = "" if self.stdout.endswith("\n") else "\n"
            return f"{self.stdout}{sep}{self.stderr}"
        return self.stdout or self.stderr

    @property
    def truncated(self) -> bool:
        """True when output was larger than what is held in memory."""
        return self.full_output_path is not None


@dataclass(frozen=True)
class DirEntry:
    """One entry of :meth:`ExecutionEnvironment.list_directory`."""

    name: str
    """Path relative to the listed directory, ``/``-separated (``src/app.py`` at depth 2)."""
    is_dir: bool
    """True for directories."""
    size: int | None
    """Size in bytes for files, ``None`` for directories."""


@dataclass(frozen=True)
class GrepOptions:
    """Options of :meth:`ExecutionEnvironment.grep` (loop spec §3.3 ``grep``)."""

    glob_filter: str | None = None
    """Only search files whose name or relative path matches this glob (``*.py``)."""
    case_insensitive: bool = False
    """Match regardless of case."""
    max_results: int = 100
    """Stop after this many matching lines (content mode) or files (other modes)."""
    output_mode: Literal["content", "files_with_matches", "count"] = "content"
    """``content``: ``path:line:text`` lines; ``files_with_matches``: one path per line;
    ``count``: ``path:N`` lines."""
    context_lines: int = 0
    """Lines of context around each match in content mode."""


@dataclass(frozen=True)
class FileStat:
    """Metadata of one workspace path."""

    path: str
    """The path relative to the workspace root, ``/``-separated."""
    is_dir: bool
    size: int
    mtime: float
    """Modification time, seconds since the epoch."""


@runtime_checkable
class ExecutionEnvironment(Protocol):
    """Where tools run (loop spec §4.1). All methods are async.

    Errors: file operations raise subclasses of
    :class:`codeloop.environments.errors.WorkspaceError` with a message that names the
    path and says what to do; they never leave a partial write (writes are atomic).
    ``exec_command`` never raises for a failing command: it returns an ``ExecResult``.
    """

    async def read_file(self, path: str, offset: int | None = None, limit: int | None = None) -> str:
        """Return text (UTF-8, undecodable bytes raise ``BinaryFileError``/``DecodeError``);
        ``offset`` is a 1-based first line, ``limit`` a line count; no line numbers added."""

    async def read_bytes(self, path: str) -> bytes:
        """Return the raw bytes of a file."""

    async def write_file(self, path: str, content: str | bytes) -> int:
        """Atomically create or replace a file, creating parents; return bytes written."""

    async def delete_file(self, path: str) -> None:
        """Delete a file (not a directory)."""

    async def file_exists(self, path: str) -> bool:
        """True when the path exists inside the workspace (False for escaping paths)."""

    async def stat(self, path: str) -> FileStat:
        """Metadata of a file or directory."""

    async def list_directory(self, path: str = ".", depth: int = 1) -> list[DirEntry]:
        """Entries under ``path`` down to ``depth`` levels, sorted by name."""

    async def exec_command(self, command: str, timeout_ms: int | None = None, working_dir: str | None = None,
                           env_vars: dict[str, str] | None = None,
                           on_output: OutputCallback | None = None) -> ExecResult:
        """Run ``command`` with the environment's shell in a new process group.

        ``timeout_ms`` defaults to the environment's default (10 s) and is capped at its
        maximum (10 min). On timeout: SIGTERM to the group, 2 s, SIGKILL. ``working_dir`` is
        a workspace path. ``env_vars`` are added after filtering (§4.2)."""

    async def grep(self, pattern: str, path: str = ".", options: GrepOptions | None = None) -> str:
        """Search file contents by regex; raise ``InvalidPatternError`` for a bad regex."""

    async def glob(self, pattern: str, path: str = ".") -> list[str]:
        """Workspace-relative paths matching ``pattern``, newest first, ``.gitignore`` respected."""

    async def initialize(self) -> None:
        """Prepare the environment (create the workspace, connect, check the sandbox)."""

    async def cleanup(self) -> None:
        """Release resources; kill commands still running."""

    def working_directory(self) -> str:
        """Absolute path of the workspace root on the host where commands run."""

    def platform(self) -> str:
        """``linux``, ``darwin``, ``windows`` or ``wasm``."""

    def os_version(self) -> str:
        """Operating system version string."""


@dataclass
class ExecLimits:
    """Timeouts and memory caps of command execution (loop spec §5.4)."""

    default_timeout_ms: int = 10_000
    max_timeout_ms: int = 600_000
    kill_grace_ms: int = 2_000
    """Time between SIGTERM and SIGKILL."""
    memory_cap_bytes: int = 1_000_000
    """Output kept in memory per stream (head + tail); the rest spills to a temp file."""


@runtime_checkable
class BackgroundJobs(Protocol):
    """A capability an environment may have besides the Protocol: starting commands in the
    background (``shell`` with ``background: true``, ``codeloop.tools.jobs``). The local and
    sandboxed environments have it; SSH has not."""

    def start_job(self, command: str, working_dir: str | None = None) -> Job:
        """Start ``command`` as ``exec_command`` would run it, without waiting; raises OSError
        when it cannot start."""

    def redact(self, text: str) -> str:
        """``text`` with secret values masked, as command output is."""


def background_jobs(env: object) -> BackgroundJobs | None:
    """``env``'s background-job capability: its own, or that of the environment a wrapper
    delegates to (``inner``, as the §4.4 wrappers do), so wrapping an environment keeps it."""
    seen = 0
    while env is not None and seen < 16:  # a wrapper chain, never a cycle of them
        if isinstance(env, BackgroundJobs):
            return env
        env, seen = getattr(env, "inner", None), seen + 1
    return None
