"""The one read of a file codeloop reads on its own: project and user config, approvals,
custom commands, ``@file`` includes and images, relay replies and session files, session logs.

Not a workspace operation (a tool's read goes through ``tools/workspace_ops.py`` and the
pipeline), so every face may import it; it is built on :mod:`codeloop.environments.safe_open`
(no FIFO waited on, no device, no link out of the repository, a bounded size).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from codeloop.environments.errors import FileNotFoundInWorkspaceError, PathOutsideWorkspaceError
from codeloop.environments.resolver import resolve_workspace_path
from codeloop.environments.safe_open import (
    MAX_READ_BYTES,
    not_regular_refusal,
    open_regular,
    parent_fd,
    read_bounded,
)


def read_owned_file(path: Path, *, max_bytes: int = MAX_READ_BYTES, within: Path | None = None,
                    shown: str | None = None) -> bytes:
    """The bytes of a file codeloop reads on its own (not a tool's read): a regular file of at
    most ``max_bytes``, opened without blocking (a FIFO is refused at once, never waited on).

    ``within`` is the repository the file belongs to: then the path, with every link on the
    way, must end inside it (a link that lies inside and points inside is followed; one
    leading out is refused with ``PathOutsideWorkspaceError``), the file is opened beneath
    the repository without following links, and a file with other hard links is refused.
    Without ``within`` (the user's own files) links are followed.

    Raises ``FileNotFoundError`` when nothing is there, another ``OSError`` when the system
    refuses the open, and a ``WorkspaceError`` (``NotAFileError``, ``FileTooLargeError``,
    ``PathOutsideWorkspaceError``) whose message names the file and the reason.
    """
    shown = str(path) if shown is None else shown
    if within is None:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise not_regular_refusal(shown, mode)
        except BaseException:
            os.close(fd)
            raise
        return read_bounded(fd, shown, max_bytes, hint="")
    try:
        resolved = resolve_workspace_path(within, os.path.abspath(path), must_exist=True)
    except FileNotFoundInWorkspaceError:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path)) from None
    except PathOutsideWorkspaceError:
        raise PathOutsideWorkspaceError(
            f"{shown!r} is a symbolic link (or lies under one) leading outside the repository "
            f"{os.path.realpath(within)}; codeloop does not read it (copy the file into the repository instead)",
            path=shown) from None
    with parent_fd(within, resolved, shown) as (dir_fd, name):
        fd = open_regular(name, shown, dir_fd=dir_fd)
    return read_bounded(fd, shown, max_bytes, hint="")
