"""Errors raised by execution environments.

::

    WorkspaceError                 any failure of a file operation in a workspace
    ├── PathOutsideWorkspaceError  the path ends outside the root (.., absolute, symlink, NUL, too long)
    ├── FileNotFoundInWorkspaceError   no such file or directory
    ├── NotAFileError              a directory (or FIFO, device, socket) where a file is expected
    ├── FileTooLargeError          a file over the byte limit of the read (refused before reading)
    ├── IsAFileError               a file where a directory is expected
    ├── BinaryFileError            a text operation on a binary file
    │   └── DecodeError            a text file that is not valid UTF-8
    ├── WriteDeniedError           the environment's mode forbids writing (read-only, sandbox)
    ├── PermissionDeniedError      the operating system refused access
    ├── InvalidPatternError        a regex or glob that does not compile
    └── SandboxUnavailableError    the sandbox cannot run here (bwrap missing, no user namespaces)

Every message names the path or pattern and says how to fix the problem; tools turn
these into error results the model can read.
"""

from __future__ import annotations


class WorkspaceError(Exception):
    """Base class: a file operation in a workspace failed."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class PathOutsideWorkspaceError(WorkspaceError):
    """Raised when a path resolves outside the workspace root."""


class FileNotFoundInWorkspaceError(WorkspaceError):
    """Raised when a file or directory does not exist."""


class NotAFileError(WorkspaceError):
    """Raised when a directory is given where a file is expected."""


class FileTooLargeError(WorkspaceError):
    """Raised when a file is larger than the read may take into memory (checked before reading)."""

    def __init__(self, message: str, path: str | None = None, *, size: int = 0, limit: int = 0) -> None:
        super().__init__(message, path)
        self.size = size
        """Bytes of the file (at least this many, for a file that grew while read)."""
        self.limit = limit
        """The byte limit of the read."""


class IsAFileError(WorkspaceError):
    """Raised when a file is given where a directory is expected."""


class BinaryFileError(WorkspaceError):
    """Raised when a text operation meets a binary (or non-UTF-8) file."""


class DecodeError(BinaryFileError):
    """Raised when a file read as text is not valid UTF-8 (the message gives line and byte)."""


class WriteDeniedError(WorkspaceError):
    """Raised when the environment's mode forbids the write."""


class PermissionDeniedError(WorkspaceError):
    """Raised when the operating system refuses access."""


class InvalidPatternError(WorkspaceError):
    """Raised for a regex or glob that does not compile."""


class SandboxUnavailableError(WorkspaceError):
    """Raised when the sandbox cannot be set up on this host."""
