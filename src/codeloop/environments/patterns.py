"""Glob patterns: the ``glob`` tool's matcher and ``.gitignore`` rules (loop spec §3.3, §4.2).

One translation from glob to regex serves both: ``*`` and ``?`` never cross ``/``,
``[...]`` is a character class (``[!...]`` negated), ``\\x`` escapes ``x``, and ``**`` as a
whole component matches any number of directories (``**/*.py`` matches ``a.py`` and
``src/pkg/a.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codeloop.environments.errors import InvalidPatternError, PathOutsideWorkspaceError


def glob_to_regex(pattern: str, *, braces: bool = True) -> str:
    """The body of a regex matching ``/``-separated paths against ``pattern`` (no anchors).

    With ``braces``, ``{a,b}`` matches either alternative (``*.{ts,tsx}``) and an unpaired
    brace raises ``re.error``, as in ripgrep; ``.gitignore`` files take braces literally,
    as git does.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*" and pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/"):
            end = i + 2
            if end == n:
                out.append(".*")
                i = end
                continue
            if pattern[end] == "/":
                out.append("(?:[^/]+/)*")
                i = end + 1
                continue
        if c == "*":
            while i + 1 < n and pattern[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (close := _class_end(pattern, i)) > 0:
            body = pattern[i + 1 : close]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            out.append(f"(?!/)[^{body}]" if negate else f"[{body}]")
            i = close
        elif c == "{" and braces:
            alternatives = _brace_alternatives(pattern, i)
            if alternatives is None:
                raise re.error("unclosed '{' (escape a literal one as [{])")
            options, close = alternatives
            out.append("(?:" + "|".join(glob_to_regex(opt) for opt in options) + ")")
            i = close
        elif c == "}" and braces:
            raise re.error("'}' without a '{' (escape a literal one as [}])")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _brace_alternatives(pattern: str, start: int) -> tuple[list[str], int] | None:
    """The comma-separated options of the ``{...}`` opened at ``start`` and its closing index."""
    depth, options, begin = 0, [], start + 1
    i = start
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                options.append(pattern[begin:i])
                return options, i
        elif c == "," and depth == 1:
            options.append(pattern[begin:i])
            begin = i + 1
        i += 1
    return None


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1 (then ``[`` is literal)."""
    j = start + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    close = pattern.find("]", j)
    return close if close > 0 else -1


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex that fully matches relative paths selected by ``pattern``.

    Raises ``InvalidPatternError`` (naming the pattern) for an empty pattern, a NUL byte,
    an unpaired brace or a character class that does not compile (``[z-a]``).
    """
    if not pattern or "\x00" in pattern:
        raise InvalidPatternError(
            f"Invalid glob pattern {pattern!r}: it is empty or contains a NUL byte; try '**/*.py'",
            path=pattern,
        )
    try:
        return re.compile(f"(?s:{glob_to_regex(pattern)})\\Z")
    except re.error as exc:
        raise InvalidPatternError(f"Invalid glob pattern {pattern!r}: {exc}; try '**/*.py'", path=pattern) from None


@dataclass(frozen=True)
class IgnoreRule:
    """One line of a ``.gitignore`` file."""

    base: str
    """Directory of the ignore file, relative to the walk root (``""`` for the root)."""
    regex: re.Pattern[str]
    """Matches the path relative to ``base``."""
    negated: bool
    """``!pattern``: re-include what an earlier rule excluded."""
    dir_only: bool
    """``pattern/``: applies to directories only."""


def parse_ignore_file(text: str, base: str) -> list[IgnoreRule]:
    """Rules of one ignore file (``.gitignore`` syntax) found in directory ``base``.

    Lines that do not compile are skipped, as git does with malformed patterns.
    """
    rules: list[IgnoreRule] = []
    for raw in text.splitlines():
        line = raw if raw.endswith("\\ ") else raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated or line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = glob_to_regex(line.lstrip("/"), braces=False)
        try:
            regex = re.compile(body if anchored else f"(?:.*/)?{body}")
        except re.error:
            continue
        rules.append(IgnoreRule(base, regex, negated, dir_only))
    return rules


def is_ignored(rules: list[IgnoreRule], rel_path: str, is_dir: bool) -> bool:
    """True when the last rule matching ``rel_path`` (relative to the walk root) excludes it.

    The walk never enters an ignored directory, so a rule only has to match the entry itself.
    """
    ignored = False
    for rule in rules:
        prefix = rule.base + "/" if rule.base else ""
        if (rule.dir_only and not is_dir) or not rel_path.startswith(prefix):
            continue
        if rule.regex.fullmatch(rel_path[len(prefix):]):
            ignored = not rule.negated
    return ignored


def workspace_glob_pattern(pattern: str, roots: tuple[str, ...]) -> str:
    """``pattern`` made relative to the workspace: an absolute pattern must start with one of
    ``roots`` (the workspace's spellings, canonical first); ``..`` segments are refused.

    Raises ``PathOutsideWorkspaceError`` naming the pattern."""
    if pattern.startswith("/"):
        for base in roots:
            if pattern == base or pattern.startswith(base.rstrip("/") + "/"):
                return pattern[len(base) :].lstrip("/") or "**"
        raise PathOutsideWorkspaceError(
            f"Glob pattern {pattern!r} is outside the workspace {roots[0]}; use a relative pattern like '**/*.py'",
            path=pattern,
        )
    if ".." in pattern.split("/"):
        raise PathOutsideWorkspaceError(
            f"Glob pattern {pattern!r} contains '..'; patterns cannot leave the search directory",
            path=pattern,
        )
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern
