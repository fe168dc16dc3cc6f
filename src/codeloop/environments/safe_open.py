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
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

from codeloop.environments.errors import PathOutsideWorkspaceError, WorkspaceError

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


def read_bytes_beneath(root: Path, resolved: Path, shown: str, *, allow_hardlinks: bool = False) -> bytes:
    """Read a regular file reached without links; refuse multiply-linked files by default."""
    with parent_fd(root, resolved, shown) as (dir_fd, name):
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _changed(shown) from None
            raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and not allow_hardlinks:
            raise hardlink_refusal(shown, info.st_nlink)
        return handle.read()


def atomic_write_beneath(root: Path, resolved: Path, data: bytes, shown: str) -> None:
    """Atomically replace ``resolved`` (temp file + fsync + rename in the same directory),
    creating parents, never following a link swapped in after the check."""
    with parent_fd(root, resolved, shown, create=True) as (dir_fd, name):
        mode = 0o666 & ~_umask()
        with contextlib.suppress(FileNotFoundError):
            existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISLNK(existing.st_mode):
                raise _changed(shown)
            if stat.S_ISDIR(existing.st_mode):
                raise WorkspaceError(f"Cannot write {shown!r}: it is a directory", path=shown)
            mode = stat.S_IMODE(existing.st_mode)
        temp = f".{name[:200]}.{uuid.uuid4().hex[:12]}.codeloop-tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp, mode, dir_fd=dir_fd)
            os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
