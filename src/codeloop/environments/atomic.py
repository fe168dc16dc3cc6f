"""Atomic file replacement (DESIGN.md: "Persist with atomic writes").

A reader, or a crash at any instant, sees either the old file or the complete new one,
never a prefix: the data goes to a temporary file in the same directory, is flushed to
disk with ``fsync``, and is renamed over the target (``rename`` is atomic within a file
system); then the directory is synced so the rename itself survives a power loss.
``durable=False`` skips both syncs, for bookkeeping that must survive a crash of the process
(the kernel keeps the data) but may be lost with the machine's power: it costs a rename.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

_NAME_ROOM = 200
"""Characters of the target's name kept in the temp name (NAME_MAX is 255 bytes)."""


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically.

    The parent directory must exist. An existing file keeps its permission bits; a new
    file gets ``0o666`` minus the umask, like ``open(path, "w")``. ``path`` is taken
    literally: callers pass a resolved workspace path (a symlink at ``path`` would be
    replaced by a regular file, not written through).

    Raises ``OSError`` (``PermissionError``, ``IsADirectoryError``, ``ENOSPC`` ...) with the
    temporary file already removed; the previous content of ``path`` is then untouched.
    """
    mode: int | None = None
    try:
        existing = os.stat(path)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        mode = stat.S_IMODE(existing.st_mode)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        replace_in_directory(dir_fd, path.name, data, mode, durable=durable)
    finally:
        os.close(dir_fd)


def replace_in_directory(dir_fd: int, name: str, data: bytes, mode: int | None = None, *,
                         durable: bool = True) -> None:
    """Atomically replace the entry ``name`` of the directory ``dir_fd`` with ``data`` (the
    steps of the module docstring); ``mode``: permission bits to set, None for a new file's
    default. On any failure the temporary file is removed and the entry is untouched."""
    short = name.encode("utf-8", "surrogateescape")[:_NAME_ROOM].decode("utf-8", "ignore")
    temp = f".{short}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o666, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if mode is not None:
                os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    if durable:
        with contextlib.suppress(OSError):  # best effort: not every file system syncs directories
            os.fsync(dir_fd)
