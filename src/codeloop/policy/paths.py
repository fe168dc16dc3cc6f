"""Decisions on workspace paths (filesystem policy).

Paths here are the *requested* relative paths; whether they stay inside the workspace is
decided by the one resolver (``codeloop.environments.resolver``) when the operation runs.
Given the workspace ``root``, :func:`evaluate_path` also judges where the path leads after
its links are resolved, so a link to a blocked file (``ln -s .env e``, then reading ``e``)
is blocked too.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Literal

from codeloop.environments.errors import WorkspaceError
from codeloop.environments.resolver import resolve_workspace_path
from codeloop.policy.model import Decision, FilesystemPolicy

FileAccess = Literal["read", "write", "delete"]

_GLOB_TOKEN = re.compile(r"\*\*/|/\*\*\Z|\*\*|\*|\?|[^*?/]+|/")
_GLOB_PARTS = {"**/": "(?:.*/)?", "/**": "(?:/.*)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}


@lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a path glob: ``**`` any depth, ``*``/``?`` within one segment; a glob without
    ``/`` matches at any depth; a trailing ``/**`` also matches the directory itself."""
    pat = pattern.strip()
    if pat.startswith("./"):
        pat = pat[2:]
    if "/" not in pat.rstrip("/"):
        pat = "**/" + pat
    body = "".join(_GLOB_PARTS.get(part) or re.escape(part) for part in _GLOB_TOKEN.findall(pat))
    return re.compile(body + r"/?\Z", re.DOTALL)


def normalize(path: str) -> str:
    """``./a//b/`` -> ``a/b``: the form globs are matched against."""
    return "/".join(p for p in path.split("/") if p not in ("", "."))


def matches(path: str, globs: tuple[str, ...]) -> str | None:
    """The first glob matching ``path``, or ``None``."""
    norm = normalize(path)
    return next((g for g in globs if glob_regex(g).match(norm)), None)


def resolved_relative(root: str, path: str) -> str | None:
    """Where ``path`` leads inside the workspace ``root`` once its links are resolved, relative
    to the root; ``None`` when it cannot be told here (outside, a bad name, no such root on
    this host): the operation's own resolver refuses those."""
    if not os.path.isdir(root):
        return None
    try:
        target = resolve_workspace_path(root, path)
    except (WorkspaceError, OSError, ValueError):
        return None
    return os.path.relpath(target, os.path.realpath(root))


def evaluate_path(path: str, access: FileAccess, policy: FilesystemPolicy, size: int | None = None,
                  root: str | None = None) -> Decision:
    """Decide one file operation on ``path`` under ``policy``; with the workspace ``root``,
    the path its links lead to must not be blocked either."""
    if not policy.enabled:
        return Decision("deny", f"file operations are disabled by policy ({access} {path})",
                        "filesystem.enabled", "enable the filesystem in the space policy")
    if access != "read" and policy.read_only:
        return Decision("deny", f"the workspace is read-only ({access} {path})",
                        "filesystem.readOnly", "use a policy with readOnly false")
    if size is not None and size > policy.max_file_size:
        return Decision("deny", f"{path}: {size} bytes exceeds the {policy.max_file_size}-byte limit",
                        "filesystem.maxFileSize", "write a smaller file or raise maxFileSize")
    hit = matches(path, policy.blocked_paths)
    if hit:
        return Decision("deny", f"path {path!r} is blocked by policy (matches {hit!r})",
                        "filesystem.blockedPaths", "use another path")
    real = resolved_relative(root, path) if root and policy.blocked_paths else None
    hit = matches(real, policy.blocked_paths) if real else None
    if real and hit:
        return Decision("deny", f"path {path!r} leads through a link to {real!r}, which is blocked by policy "
                        f"(matches {hit!r})", "filesystem.blockedPaths", "use another path")
    if policy.allowed_paths and not matches(path, policy.allowed_paths):
        return Decision("deny", f"path {path!r} is outside the allowed paths "
                        f"({', '.join(policy.allowed_paths)})", "filesystem.allowedPaths",
                        "use a path under the allowed paths")
    if access != "read":
        hit = matches(path, policy.approval_paths)
        if hit:
            return Decision("ask", f"{access} of {path!r} requires approval (matches {hit!r})",
                            "filesystem.approvalRequired")
    return Decision.allow()
