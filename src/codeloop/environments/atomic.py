"""Atomic file replacement (DESIGN.md: "Persist with atomic writes").

A reader, or a crash at any instant, sees either the old file or the complete new one,
never a prefix: the data goes to a temporary file in the same directory, is flushed to
disk with ``fsync``, and is renamed over the target (``rename`` is atomic within a file
system); then the directory is synced so the rename itself survives a power loss.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

_NAME_ROOM = 200
"""Characters of the target's name kept in the temp name (NAME_MAX is 255 bytes)."""


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically.

    The parent directory must exist. An existing file keeps its permission bits; a new
    file gets ``0o666`` minus the umask, like ``open(path, "w")``. ``path`` is taken
    literally: callers pass a resolved workspace path (a symlink at ``path`` would be
    replaced by a regular file, not written through).

    Raises ``OSError`` (``PermissionError``, ``IsADirectoryError``, ``ENOSPC`` ...) with the
    temporary file already removed; the previous content of ``path`` is then untouched.
    """
    directory = path.parent
    mode: int | None = None
    try:
        existing = os.stat(path)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        mode = stat.S_IMODE(existing.st_mode)
    name = path.name.encode("utf-8", "surrogateescape")[:_NAME_ROOM].decode("utf-8", "ignore")
    tmp = directory / f".{name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if mode is not None:
                os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _sync_directory(directory)


def _sync_directory(directory: Path) -> None:
    """Flush the directory entry of the rename; best effort (not every FS allows it)."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
