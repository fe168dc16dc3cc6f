"""The one place where a workspace path is judged safe (DESIGN.md "Layers", loop spec §4.2).

``resolve_workspace_path`` turns an untrusted path string (from a model, a pasted file,
an HTTP body) into a canonical absolute path that is guaranteed to lie inside the
workspace root *at the time of the call*. It walks the path one component at a time the
way the kernel does: ``..`` goes to the parent of what has been resolved so far, and every
symbolic link met on the way is followed (its target may itself contain ``..`` or more
links). Components that do not exist yet are taken literally, so a path for a file about
to be created is resolved through its deepest existing parent.

Not protected: a race where another process swaps a directory for a symlink between this
check and the following ``open`` (time-of-check to time-of-use). Within codeloop every
write goes through the environment right after the check; a hostile local process with
write access to the workspace is outside the threat model.
"""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path

from codeloop.environments.errors import FileNotFoundInWorkspaceError, PathOutsideWorkspaceError

MAX_PATH_BYTES = 4096
"""Longest accepted path, in bytes of its file-system encoding (Linux ``PATH_MAX``)."""
MAX_COMPONENT_BYTES = 255
"""Longest accepted single file name, in bytes (Linux ``NAME_MAX``)."""
MAX_SYMLINKS = 40
"""Symbolic links followed in one resolution before giving up (Linux ``MAXSYMLINKS``)."""

_SHOWN_CHARS = 200


def _shown(path: str) -> str:
    """The path as quoted in error messages: repr-escaped and cut to a readable length."""
    text = path if len(path) <= _SHOWN_CHARS else path[:_SHOWN_CHARS] + "..."
    return repr(text)


def _reject(path: str, why: str) -> PathOutsideWorkspaceError:
    return PathOutsideWorkspaceError(f"Path {_shown(path)} {why}", path=path)


def check_path_syntax(path: str) -> None:
    """Reject strings that can never name a file (NUL, unencodable, too long) with
    ``PathOutsideWorkspaceError``; does not look at the file system."""
    if not isinstance(path, str):
        raise PathOutsideWorkspaceError(f"Path {path!r} is not a string", path=str(path))
    if "\x00" in path:
        raise _reject(path, "contains a NUL byte; file names cannot contain NUL")
    try:
        encoded = os.fsencode(path)
    except UnicodeError:
        raise _reject(path, "is not a valid file name (it contains unencodable characters)") from None
    if len(encoded) > MAX_PATH_BYTES:
        raise _reject(
            path, f"is too long ({len(encoded)} bytes, the limit is {MAX_PATH_BYTES}); use a shorter path"
        )
    for part in encoded.split(b"/"):
        if len(part) > MAX_COMPONENT_BYTES:
            raise _reject(
                path,
                f"has a component of {len(part)} bytes (the limit is {MAX_COMPONENT_BYTES}); "
                "use shorter file names",
            )


def _walk(start: str, path: str, original: str) -> str:
    """Resolve ``path`` against the real directory ``start`` like the kernel would.

    Returns the canonical path; raises on symlink loops. Missing components are kept
    literally (a later ``..`` pops them), so ``a/new/../b`` resolves to ``a/b``.
    """
    resolved = "/" if path.startswith("/") else start
    pending = [p for p in path.split("/") if p and p != "."]
    pending.reverse()
    links = 0
    while pending:
        name = pending.pop()
        if name == "..":
            resolved = posixpath.dirname(resolved)
            continue
        candidate = posixpath.join(resolved, name)
        try:
            mode = os.lstat(candidate).st_mode
        except OSError:
            # Missing, not a directory, or unreadable: nothing to follow here.
            resolved = candidate
            continue
        if not stat.S_ISLNK(mode):
            resolved = candidate
            continue
        links += 1
        if links > MAX_SYMLINKS:
            raise _reject(original, "cannot be resolved: too many levels of symbolic links (a link loop?)")
        try:
            target = os.readlink(candidate)
        except OSError:
            resolved = candidate
            continue
        if target.startswith("/"):
            resolved = "/"
        pending.extend(reversed([p for p in target.split("/") if p and p != "."]))
    return resolved


def is_within(path: str, directory: str) -> bool:
    """True when the ``/``-separated ``path`` is ``directory`` or lies below it (as text)."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def resolve_workspace_path(root: Path | str, path: str, *, must_exist: bool = False) -> Path:
    """Return the canonical absolute path of ``path`` inside the workspace ``root``.

    ``path`` is relative to ``root``, or absolute and inside it; ``""`` and ``"."`` name the
    root itself. Symbolic links are resolved (for a path that does not exist yet, through
    its deepest existing parent), so the result is where a read or write will really land.

    Raises:
        PathOutsideWorkspaceError: the path ends outside the root (``..``, an absolute path
            elsewhere, a symlink pointing out), contains a NUL byte or unencodable characters,
            is longer than 4096 bytes or has a component longer than 255 bytes, or loops
            through symlinks. The message names the path and says what to do.
        FileNotFoundInWorkspaceError: ``must_exist`` is true and nothing exists there.
    """
    check_path_syntax(path)
    real_root = os.path.realpath(root)
    resolved = _walk(real_root, path, path)
    if len(os.fsencode(resolved)) > MAX_PATH_BYTES:
        raise _reject(path, f"resolves to a path longer than {MAX_PATH_BYTES} bytes; use a shorter path")
    if not is_within(resolved, real_root):
        raise _reject(
            path,
            f"is outside the workspace {real_root} (it resolves to {resolved}); "
            "use a path relative to the workspace root",
        )
    if must_exist and not os.path.lexists(resolved):
        raise FileNotFoundInWorkspaceError(
            f"No such file or directory: {_shown(path)} in the workspace {real_root}; "
            "check the path (list the directory to see what exists)",
            path=path,
        )
    return Path(resolved)


def relative_to_root(root: Path | str, abs_path: Path | str) -> str:
    """The ``/``-separated path of ``abs_path`` relative to ``root`` (``"."`` for the root).

    ``abs_path`` should come from :func:`resolve_workspace_path`; anything outside the
    (canonical) root raises :class:`PathOutsideWorkspaceError`.
    """
    real_root = os.path.realpath(root)
    text = os.fspath(abs_path)
    if not is_within(text, real_root):
        text = os.path.realpath(text)
        if not is_within(text, real_root):
            raise _reject(text, f"is outside the workspace {real_root}")
    rel = text[len(real_root) :].lstrip("/")
    return rel or "."
