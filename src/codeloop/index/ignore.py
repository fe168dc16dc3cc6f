"""Walking a repository the way git sees it: ``.gitignore`` files respected.

The rules themselves (syntax, negation, ``**``, anchoring) are the workspace's one
implementation in :mod:`codeloop.environments.patterns`; this module walks with them.
Nested ``.gitignore`` files apply below their directory, ``.git/info/exclude`` at the
root. Symbolic links are never followed, so the walk cannot leave the repository.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from codeloop.environments.patterns import IgnoreRule, is_ignored, parse_ignore_file
from codeloop.environments.safe_open import read_config_text

ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache",
                            ".ruff_cache", ".pytest_cache", ".tox"})
"""Directory names skipped even without a ``.gitignore`` (VCS data, caches, installed deps)."""


def walk_repository(root: str) -> Iterator[tuple[str, os.stat_result]]:
    """Yield ``(relative_path, stat)`` of every regular file git would not ignore.

    Paths are ``/``-separated and relative to ``root``; symlinks are skipped (never
    followed), so every yielded file is physically inside ``root``.
    """
    rules: list[IgnoreRule] = []
    exclude = os.path.join(root, ".git", "info", "exclude")
    if os.path.isfile(exclude):
        rules = parse_ignore_file(read_config_text(exclude) or "", "")
    yield from _walk(root, "", rules)


def _walk(root: str, rel_dir: str, rules: list[IgnoreRule]) -> Iterator[tuple[str, os.stat_result]]:
    abs_dir = os.path.join(root, rel_dir) if rel_dir else root
    try:
        entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
    except OSError:
        return
    gitignore = next((e for e in entries if e.name == ".gitignore" and e.is_file(follow_symlinks=False)), None)
    if gitignore is not None:
        rules = rules + parse_ignore_file(read_config_text(gitignore.path) or "", rel_dir)
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        if entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.name in ALWAYS_SKIPPED or is_ignored(rules, rel, True):
                continue
            yield from _walk(root, rel, rules)
        elif entry.is_file(follow_symlinks=False):
            if is_ignored(rules, rel, False):
                continue
            yield rel, entry.stat(follow_symlinks=False)
