"""Walking a repository the way git sees it: ``.gitignore`` files respected.

Supports the gitignore syntax that matters in practice: comments, blank lines,
``!`` negation, trailing ``/`` (directories only), leading or inner ``/`` (anchored to
the ``.gitignore``'s directory), ``*``, ``?``, ``[...]`` and ``**``. Nested
``.gitignore`` files apply below their directory, and ``.git/info/exclude`` at the root.
Symbolic links are never followed, so the walk cannot leave the repository.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache",
                            ".ruff_cache", ".pytest_cache", ".tox"})
"""Directory names skipped even without a ``.gitignore`` (VCS data, caches, installed deps)."""


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


def _glob_to_regex(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern[i:i + 2] == "**":
                at_start = i == 0 or pattern[i - 1] == "/"
                after = pattern[i + 2:i + 3]
                if at_start and after == "/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if at_start and after == "":
                    out.append(".*")
                    i += 2
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def parse_gitignore(text: str) -> list[_Rule]:
    """Rules of one ``.gitignore`` file, in order (later rules win)."""
    rules: list[_Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if raw.endswith("\\ "):
            line = raw[:-2] + " "
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        elif line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _glob_to_regex(line)
        prefix = "" if anchored else "(?:.*/)?"
        # A matched directory ignores everything below it.
        try:
            regex = re.compile(f"^{prefix}{body}(?:/.*)?$" if not dir_only else f"^{prefix}{body}$")
        except re.error:
            continue  # git skips patterns it cannot parse (e.g. "[]")
        rules.append(_Rule(regex, negated, dir_only))
    return rules


class IgnoreMatcher:
    """The stack of ``.gitignore`` rules that apply at one point of the walk."""

    def __init__(self, layers: tuple[tuple[str, tuple[_Rule, ...]], ...] = ()) -> None:
        self._layers = layers

    def with_file(self, base: str, text: str) -> IgnoreMatcher:
        """A matcher that also applies ``text``'s rules to paths under ``base`` (``""`` = root)."""
        rules = tuple(parse_gitignore(text))
        return IgnoreMatcher((*self._layers, (base, rules))) if rules else self

    def ignored(self, rel_path: str, is_dir: bool) -> bool:
        """True when git would ignore ``rel_path`` (relative to the repository root)."""
        result = False
        for base, rules in self._layers:
            if base:
                if not rel_path.startswith(base + "/"):
                    continue
                sub = rel_path[len(base) + 1:]
            else:
                sub = rel_path
            for rule in rules:
                if rule.dir_only and not is_dir:
                    # "build/" also covers files inside build/.
                    parent = sub.rsplit("/", 1)[0] if "/" in sub else ""
                    if not parent or not _dir_prefix_matches(rule.regex, parent):
                        continue
                elif not rule.regex.match(sub):
                    continue
                result = not rule.negated
        return result


def _dir_prefix_matches(regex: re.Pattern[str], parent: str) -> bool:
    parts = parent.split("/")
    return any(regex.match("/".join(parts[:k])) for k in range(1, len(parts) + 1))


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def walk_repository(root: str) -> Iterator[tuple[str, os.stat_result]]:
    """Yield ``(relative_path, stat)`` of every regular file git would not ignore.

    Paths are ``/``-separated and relative to ``root``; symlinks are skipped (never
    followed), so every yielded file is physically inside ``root``.
    """
    matcher = IgnoreMatcher()
    exclude = os.path.join(root, ".git", "info", "exclude")
    if os.path.isfile(exclude):
        matcher = matcher.with_file("", _read_text(exclude))
    yield from _walk(root, "", matcher)


def _walk(root: str, rel_dir: str, matcher: IgnoreMatcher) -> Iterator[tuple[str, os.stat_result]]:
    abs_dir = os.path.join(root, rel_dir) if rel_dir else root
    try:
        entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
    except OSError:
        return
    gitignore = next((e for e in entries if e.name == ".gitignore" and e.is_file(follow_symlinks=False)), None)
    if gitignore is not None:
        matcher = matcher.with_file(rel_dir, _read_text(gitignore.path))
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        if entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.name in ALWAYS_SKIPPED or matcher.ignored(rel, True):
                continue
            yield from _walk(root, rel, matcher)
        elif entry.is_file(follow_symlinks=False):
            if matcher.ignored(rel, False):
                continue
            yield rel, entry.stat(follow_symlinks=False)
