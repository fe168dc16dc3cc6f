"""Environments that wrap another one for a cross-cutting concern (loop spec §4.4).

Both forward every Protocol method to ``inner`` unchanged except:

- ``LoggingExecutionEnvironment`` logs each command before it runs and its exit code and
  duration after, and each write and delete (at ``INFO``; failures at ``WARNING``).
- ``ReadOnlyExecutionEnvironment`` refuses ``write_file`` and ``delete_file`` with
  ``WriteDeniedError`` before touching anything. Commands still run: a shell command's
  intent to write cannot be judged reliably from its text, so use the bubblewrap sandbox
  (``SandboxedExecutionEnvironment(mode="read-only")``) when commands must not write either.
"""

from __future__ import annotations

import logging

from codeloop.environments.base import (
    DirEntry,
    ExecResult,
    ExecutionEnvironment,
    FileStat,
    GrepOptions,
    OutputCallback,
)
from codeloop.environments.errors import WriteDeniedError


class DelegatingExecutionEnvironment:
    """Forwards every method to ``inner``; subclass it and override what you change."""

    def __init__(self, inner: ExecutionEnvironment) -> None:
        self.inner = inner

    @property
    def protects_host_files(self) -> bool:
        """The inner environment's (True when a sandbox keeps what the host runs read-only)."""
        return bool(getattr(self.inner, "protects_host_files", False))

    @property
    def files_elsewhere(self) -> bool:
        """The inner environment's (True when its files are on another machine: SSH)."""
        return bool(getattr(self.inner, "files_elsewhere", False))

    async def read_file(self, path: str, offset: int | None = None, limit: int | None = None) -> str:
        return await self.inner.read_file(path, offset, limit)

    async def read_bytes(self, path: str) -> bytes:
        return await self.inner.read_bytes(path)

    async def write_file(self, path: str, content: str | bytes) -> int:
        return await self.inner.write_file(path, content)

    async def delete_file(self, path: str) -> None:
        await self.inner.delete_file(path)

    async def file_exists(self, path: str) -> bool:
        return await self.inner.file_exists(path)

    async def stat(self, path: str) -> FileStat:
        return await self.inner.stat(path)

    async def list_directory(self, path: str = ".", depth: int = 1) -> list[DirEntry]:
        return await self.inner.list_directory(path, depth)

    async def exec_command(self, command: str, timeout_ms: int | None = None, working_dir: str | None = None,
                           env_vars: dict[str, str] | None = None,
                           on_output: OutputCallback | None = None) -> ExecResult:
        return await self.inner.exec_command(command, timeout_ms, working_dir, env_vars, on_output)

    async def grep(self, pattern: str, path: str = ".", options: GrepOptions | None = None) -> str:
        return await self.inner.grep(pattern, path, options)

    async def glob(self, pattern: str, path: str = ".") -> list[str]:
        return await self.inner.glob(pattern, path)

    async def initialize(self) -> None:
        await self.inner.initialize()

    async def cleanup(self) -> None:
        await self.inner.cleanup()

    def working_directory(self) -> str:
        return self.inner.working_directory()

    def platform(self) -> str:
        return self.inner.platform()

    def os_version(self) -> str:
        return self.inner.os_version()


class LoggingExecutionEnvironment(DelegatingExecutionEnvironment):
    """Logs commands (``exec: CMD`` / ``exit: CODE in Nms``), writes and deletes (spec §4.4).

    ``logger`` defaults to ``logging.getLogger("codeloop.environments")``. Command text is
    logged as given; environment variables passed in ``env_vars`` are not logged.
    """

    def __init__(self, inner: ExecutionEnvironment, logger: logging.Logger | None = None) -> None:
        super().__init__(inner)
        self.logger = logger if logger is not None else logging.getLogger("codeloop.environments")

    async def exec_command(self, command: str, timeout_ms: int | None = None, working_dir: str | None = None,
                           env_vars: dict[str, str] | None = None,
                           on_output: OutputCallback | None = None) -> ExecResult:
        self.logger.info("exec: %s", command)
        result = await super().exec_command(command, timeout_ms, working_dir, env_vars, on_output)
        level = logging.WARNING if result.timed_out else logging.INFO
        suffix = " (timed out)" if result.timed_out else ""
        self.logger.log(level, "exit: %s in %sms%s", result.exit_code, result.duration_ms, suffix)
        return result

    async def write_file(self, path: str, content: str | bytes) -> int:
        try:
            written = await super().write_file(path, content)
        except Exception as exc:
            self.logger.warning("write %s failed: %s", path, exc)
            raise
        self.logger.info("write: %s (%d bytes)", path, written)
        return written

    async def delete_file(self, path: str) -> None:
        try:
            await super().delete_file(path)
        except Exception as exc:
            self.logger.warning("delete %s failed: %s", path, exc)
            raise
        self.logger.info("delete: %s", path)


class ReadOnlyExecutionEnvironment(DelegatingExecutionEnvironment):
    """Refuses writes and deletes with ``WriteDeniedError``; reads and commands pass (spec §4.4)."""

    async def write_file(self, path: str, content: str | bytes) -> int:
        raise WriteDeniedError(
            f"Cannot write {path!r}: write operations are disabled in read-only mode", path=path
        )

    async def delete_file(self, path: str) -> None:
        raise WriteDeniedError(
            f"Cannot delete {path!r}: write operations are disabled in read-only mode", path=path
        )
