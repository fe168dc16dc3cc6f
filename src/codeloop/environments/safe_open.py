"""Open a path the resolver has judged, without following links swapped in since.

``resolve_workspace_path`` answers "where does this path land *now*"; between that answer
and the ``open`` another process can replace a directory on the way with a symbolic link
pointing out of the workspace (time-of-check to time-of-use). The functions here close
that window: they start from a descriptor of the workspace root and open each component
of the already-canonical path with ``O_NOFOLLOW`` relative to its parent's descriptor.
A canonical path contains no links, so meeting one means the tree changed after the
check; the operation is refused with ``PathOutsideWorkspaceError`` instead of following it.

Hard links: a file with more than one link may be the same inode as a file outside the
workspace (``ln /etc/shadow ws/x``). Reads of such files are refused by default; writes
replace the directory entry (rename), so they never reach the other name.

Files that are not regular (a FIFO, a socket, a device) are refused on every read: the
file is opened with ``O_NONBLOCK`` and checked with ``fstat`` before any read, so opening
a FIFO nobody writes to returns at once instead of blocking (issue 22). Every read of
workspace content goes through here: the file tools, ``grep`` (its own reads and a check
of every file ``rg`` reports), the code index. Deletes walk the same way
(``unlink_beneath``), so a directory swapped for a link cannot redirect them.

Size (issue 32): every read is bounded before it reads. ``fstat`` gives the size first and
a file over the read's limit (:data:`MAX_READ_BYTES` unless the caller gives a smaller one)
is refused with :class:`FileTooLargeError`; the read itself then takes at most one byte more
than the limit, so a file that grows while read (or reports no size) cannot exhaust memory.
:func:`codeloop.environments.owned_files.read_owned_file` is the same open for the files codeloop reads on its own (project
config, approvals, custom commands, ``@file`` includes, images, relay replies, session
logs): no FIFO, device or socket, a bounded size and, for a repository's files, no link
leading out of the repository.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from codeloop.environments.atomic import replace_in_directory
from codeloop.environments.errors import (
    FileTooLargeError,
    NotAFileError,
    PathOutsideWorkspaceError,
    WorkspaceError,
)

MAX_READ_BYTES = 64 * 1024 * 1024
"""The most one read of a file takes into memory, whoever reads (64 MiB): the workspace
reads of every tool and face, and every file codeloop reads on its own, unless the caller
names a smaller limit. A bigger file is refused before a byte is read."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _changed(path: str) -> PathOutsideWorkspaceError:
    return PathOutsideWorkspaceError(
        f"Path {path!r} changed while it was being used (a symbolic link appeared on the way); "
        "the operation was refused. Retry once the workspace is stable.",
        path=path,
    )


def _parts(root: Path, resolved: Path) -> list[str]:
    rel = os.path.relpath(resolved, os.path.realpath(root))
    if rel == "." :
        return []
    if rel == ".." or rel.startswith("../"):
        raise PathOutsideWorkspaceError(f"Path {str(resolved)!r} is outside the workspace {root}", path=str(resolved))
    return rel.split("/")


@contextlib.contextmanager
def parent_fd(root: Path, resolved: Path, shown: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """Yield ``(fd of the parent directory, final name)`` reached without following links.

    With ``create``, missing parent directories are made on the way (each with ``mkdirat``
    semantics relative to its already-opened parent)."""
    parts = _parts(root, resolved)
    if not parts:
        raise WorkspaceError(f"{shown!r} is the workspace root itself, not a file", path=shown)
    fd = os.open(os.path.realpath(root), _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _changed(shown) from None
                raise
            os.close(fd)
            fd = next_fd
        yield fd, parts[-1]
    finally:
        os.close(fd)


def hardlink_refusal(shown: str, links: int) -> PathOutsideWorkspaceError:
    """The error for reading a file with ``links`` hard links (every environment uses it)."""
    return PathOutsideWorkspaceError(
        f"{shown!r} is a hard link shared with {links - 1} other name(s), which may lie "
        "outside the workspace; it is not read. Copy the file (cp) to break the link.",
        path=shown,
    )


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def not_regular_refusal(shown: str, mode: int) -> NotAFileError:
    """The error for reading something that is not a regular file (every read path uses it)."""
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return NotAFileError(
        f"{shown!r} is {kind}, not a regular file; it is not read (reading it could block or never end)",
        path=shown,
    )


def open_regular(name: str, shown: str, *, dir_fd: int | None = None, allow_hardlinks: bool = False) -> int:
    """Open ``name`` for reading without following a final link and without blocking;
    return the descriptor of a regular file, or raise (non-regular, multiply linked, link)."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _changed(shown) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise not_regular_refusal(shown, info.st_mode)
        if info.st_nlink > 1 and not allow_hardlinks:
            raise hardlink_refusal(shown, info.st_nlink)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _size_text(size: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size} bytes ({size / scale:.1f} {unit})"
    return f"{size} bytes"


WORKSPACE_READ_HINT = ("look at parts of it with a command instead, e.g. sed -n '1,200p' FILE, "
                       "head -c 100000 FILE or grep -n PATTERN FILE")
"""What a too-large workspace file's refusal advises (a model or a user reads it)."""


def too_large_refusal(shown: str, size: int, limit: int, *, grew: bool = False,
                      hint: str = WORKSPACE_READ_HINT) -> FileTooLargeError:
    """The error for a file over the read's byte limit (every bounded read uses it)."""
    what = f"grew past {limit} bytes while it was read" if grew else f"is {_size_text(size)}"
    return FileTooLargeError(
        f"{shown!r} {what}, over the {_size_text(limit)} limit of this read; it is not read"
        + (f": {hint}" if hint else ""), path=shown, size=size, limit=limit)


def read_bounded(fd: int, shown: str, max_bytes: int, *, hint: str = WORKSPACE_READ_HINT) -> bytes:
    """Read the regular file open at ``fd`` (and close it): refused before reading when
    ``fstat`` says it is over ``max_bytes``, and never more than ``max_bytes + 1`` bytes
    read, so a file that grows meanwhile is refused too instead of filling memory."""
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise too_large_refusal(shown, size, max_bytes, hint=hint)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise too_large_refusal(shown, len(data), max_bytes, grew=True, hint=hint)
    return data


def read_bytes_beneath(root: Path, resolved: Path, shown: str, *, allow_hardlinks: bool = False,
                       max_bytes: int = MAX_READ_BYTES) -> bytes:
    """Read a regular file of at most ``max_bytes`` reached without links; refuse
    multiply-linked files by default."""
    with parent_fd(root, resolved, shown) as (dir_fd, name):
        fd = open_regular(name, shown, dir_fd=dir_fd, allow_hardlinks=allow_hardlinks)
    return read_bounded(fd, shown, max_bytes)


def read_config_text(path: str) -> str | None:
    """The text of a small configuration file (an ignore file), or None when it is
    missing, not a regular file or over :data:`MAX_READ_BYTES`. Links are followed, as git and ripgrep do."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    try:
        return read_bounded(fd, path, MAX_READ_BYTES, hint="").decode("utf-8", "replace")
    except FileTooLargeError:
        return None


def is_plain_file_beneath(root: Path, rel: str, *, allow_hardlinks: bool = False) -> bool:
    """True when ``rel`` (root-relative) is now a regular file reached without links and,
    unless ``allow_hardlinks``, with a single link: what a search may show content of."""
    try:
        with parent_fd(root, root / rel, rel) as (dir_fd, name):
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (OSError, WorkspaceError):
        return False
    return stat.S_ISREG(info.st_mode) and (allow_hardlinks or info.st_nlink == 1)


def unlink_beneath(root: Path, entry: Path, shown: str) -> None:
    """Remove the file, link or FIFO at ``entry`` (its parent is canonical), reaching the
    parent without following links, so a directory swapped for a link on the way is
    refused instead of redirecting the delete outside the workspace."""
    with parent_fd(root, entry, shown) as (dir_fd, name):
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            raise NotAFileError(f"Cannot delete {shown!r}: it is a directory", path=shown)
        os.unlink(name, dir_fd=dir_fd)


def atomic_write_beneath(root: Path, resolved: Path, data: bytes, shown: str) -> None:
    """Atomically replace ``resolved`` (``atomic.replace_in_directory``), creating parents,
    never following a link swapped in after the check."""
    with parent_fd(root, resolved, shown, create=True) as (dir_fd, name):
        mode: int | None = None
        with contextlib.suppress(FileNotFoundError):
            existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISLNK(existing.st_mode):
                raise _changed(shown)
            if stat.S_ISDIR(existing.st_mode):
                raise WorkspaceError(f"Cannot write {shown!r}: it is a directory", path=shown)
            mode = stat.S_IMODE(existing.st_mode)
        replace_in_directory(dir_fd, name, data, mode)
