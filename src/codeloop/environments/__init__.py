"""Where tools run: the ``ExecutionEnvironment`` seam and its local implementation (loop spec §4).

Public names for the other layers:

- ``ExecutionEnvironment`` (Protocol), ``ExecResult``, ``DirEntry``, ``FileStat``,
  ``GrepOptions``, ``ExecLimits``; the ``WorkspaceError`` tree.
- ``LocalExecutionEnvironment``; wrappers ``LoggingExecutionEnvironment``,
  ``ReadOnlyExecutionEnvironment`` (and ``DelegatingExecutionEnvironment`` to write more).
- ``resolve_workspace_path`` / ``relative_to_root``: the one path check of the project.
- ``atomic_write``: the one way to replace a file.
- ``run_process``: the one place a process is started and killed.
- ``filter_environment``: which host variables a command sees.

``SandboxedExecutionEnvironment`` (``codeloop.environments.sandbox``) and
``SSHExecutionEnvironment`` (``codeloop.environments.ssh``) are imported from their modules;
``open_environment`` (``codeloop.environments.factory``) is how a face chooses between local
and sandboxed, with one network default.
"""

from codeloop.environments.atomic import atomic_write
from codeloop.environments.base import (
    DirEntry,
    EnvPolicy,
    ExecLimits,
    ExecResult,
    ExecutionEnvironment,
    FileStat,
    GrepOptions,
    OutputCallback,
    OutputStream,
)
from codeloop.environments.envfilter import filter_environment
from codeloop.environments.errors import (
    BinaryFileError,
    DecodeError,
    FileNotFoundInWorkspaceError,
    InvalidPatternError,
    IsAFileError,
    NotAFileError,
    PathOutsideWorkspaceError,
    PermissionDeniedError,
    SandboxUnavailableError,
    WorkspaceError,
    WriteDeniedError,
)
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.environments.logging_and_read_only import (
    DelegatingExecutionEnvironment,
    LoggingExecutionEnvironment,
    ReadOnlyExecutionEnvironment,
)
from codeloop.environments.resolver import relative_to_root, resolve_workspace_path
from codeloop.environments.runner import run_process, signal_process_group

__all__ = [
    "BinaryFileError", "DecodeError", "DelegatingExecutionEnvironment", "DirEntry", "EnvPolicy",
    "ExecLimits", "ExecResult", "ExecutionEnvironment", "FileNotFoundInWorkspaceError", "FileStat",
    "GrepOptions", "InvalidPatternError", "IsAFileError", "LocalExecutionEnvironment",
    "LoggingExecutionEnvironment", "NotAFileError", "OutputCallback", "OutputStream",
    "PathOutsideWorkspaceError", "PermissionDeniedError", "ReadOnlyExecutionEnvironment",
    "SandboxUnavailableError", "WorkspaceError", "WriteDeniedError", "atomic_write", "filter_environment",
    "relative_to_root", "resolve_workspace_path", "run_process", "signal_process_group",
]
