"""Listing workspace files the way ``rg --files --no-require-git`` does (pure-Python fallback).

Used when the ``rg`` binary is missing, so ``grep`` and ``glob`` give the same answers
either way: hidden names (``.name``) are skipped, ``.gitignore``, ``.ignore`` and
``.rgignore`` files apply below their directory (and ``.git/info/exclude`` at the root),
and symbolic links are never followed nor listed, so the walk cannot leave the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from codeloop.environments.patterns import IgnoreRule, is_ignored, parse_ignore_file
from codeloop.environments.safe_open import read_config_text

IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")
"""Ignore files read in every directory, in increasing precedence (as ripgrep does)."""


def _read_rules(abs_dir: str, rel_dir: str) -> list[IgnoreRule]:
    texts = (read_config_text(os.path.join(abs_dir, name)) for name in IGNORE_FILES)
    return [rule for text in texts if text is not None for rule in parse_ignore_file(text, rel_dir)]


def _root_rules(root: str, start_rel: str) -> list[IgnoreRule]:
    """Rules that apply at ``start_rel``: the root's exclude file and every ancestor's ignore files."""
    exclude = read_config_text(os.path.join(root, ".git", "info", "exclude"))
    rules = parse_ignore_file(exclude, "") if exclude is not None else []
    rel = ""
    rules += _read_rules(root, rel)
    for part in [p for p in start_rel.split("/") if p not in ("", ".")][:-1]:
        rel = f"{rel}/{part}" if rel else part
        rules += _read_rules(os.path.join(root, rel), rel)
    return rules


def walk_files(root: str, start_rel: str = ".", include: Callable[[str], bool] | None = None) -> Iterator[str]:
    """Yield the root-relative ``/``-separated paths of regular files under ``start_rel``.

    ``root`` is the canonical workspace root; ``start_rel`` a root-relative directory or
    file (a file is yielded as is, like an explicit ripgrep argument). Order: sorted by
    name within each directory, depth first.

    ``include`` behaves like ripgrep's ``--glob`` overrides: when given, only files it
    accepts are yielded, and an entry it accepts is taken even if hidden or ignored (a
    directory it accepts is entered).
    """
    start_rel = "" if start_rel in ("", ".") else start_rel.strip("/")
    abs_start = os.path.join(root, start_rel) if start_rel else root
    if os.path.isfile(abs_start):
        yield start_rel
        return
    rules = _root_rules(root, start_rel)
    yield from _walk(root, start_rel, rules, include)


def _walk(
    root: str, rel_dir: str, rules: list[IgnoreRule], include: Callable[[str], bool] | None
) -> Iterator[str]:
    abs_dir = os.path.join(root, rel_dir) if rel_dir else root
    rules = rules + _read_rules(abs_dir, rel_dir)
    try:
        entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        chosen = include is not None and include(rel)
        if entry.name.startswith(".") and not chosen:
            continue
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if chosen or not is_ignored(rules, rel, True):
                    yield from _walk(root, rel, rules, include)
            elif entry.is_file(follow_symlinks=False):
                if chosen or (include is None and not is_ignored(rules, rel, False)):
                    yield rel
        except OSError:
            continue
