"""Fenced code blocks that a reply says belong to a file (issue 20: aider's "whole" edit format).

Small models write code well in a fenced block and badly as a tool call. A reply holding a
line that names a file, immediately followed (at most one blank line between) by a closed
fenced block, says "this is the new content of that file"::

    app.py                           **app.py**                File: src/app.py
    ```python                        ```python                 ```
    def main(): ...                  ...                       ...
    ```                              ```                       ```

:func:`named_blocks` finds them; it reads untrusted text and never raises. A naming line is
either *exact* (the file name and nothing else, give or take markdown: a heading, bold,
backticks, a list bullet, a ``File:`` label, a trailing colon) or *prose* ending with a
colon and naming exactly one file (``Here is the updated `app.py`:``). A block whose fence
names a language must be in that file's language; after a prose line it must name one.
Whether a block becomes a change, and which, is decided elsewhere (:mod:`.file_edits`).

:func:`numbered_listings` finds the other form a small model writes a file in: the form
codeloop shows files in (``  1 | line``, read_file's numbering) under a line naming the file,
copied back with its change made (the 1.5B model answered the task "Hi to Hello" with the
task's own ``## greeting.py`` listing saying ``Hello``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^[ \t]{0,3}(?P=fence)[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_PATH = re.compile(r"(?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+)*")
_EXTENSION = re.compile(r"[^/]\.([A-Za-z][A-Za-z0-9]{0,9})$")
_IN_PROSE = re.compile(r"(?<![\w/.-])`?((?:\.{0,2}/)?[\w-][\w.-]*(?:/[\w.-]+)*\.[A-Za-z][A-Za-z0-9]{0,9})`?(?![\w/-])")
_LABEL = re.compile(r"^(?:file\s*name|filename|file|path)\s*:\s*", re.IGNORECASE)
_MARKUP = re.compile(r"^(?:#{1,6}\s+|>\s*|[-*+]\s+|\d{1,3}[.)]\s+)")
_WRAPS = ("**", "__", "*", "_", "`", '"', "'")
_NOT_FILES = frozenset({"e.g", "i.e", "etc", "vs"})

LANGUAGES: dict[str, frozenset[str]] = {
    ext: frozenset(tags.split()) for ext, tags in {
        "py": "python py python3 py3", "pyi": "python py pyi",
        "js": "javascript js node", "mjs": "javascript js mjs", "cjs": "javascript js cjs", "jsx": "jsx javascript js",
        "ts": "typescript ts", "tsx": "tsx typescript ts", "json": "json jsonc json5", "jsonl": "jsonl json",
        "yaml": "yaml yml", "yml": "yaml yml", "toml": "toml", "ini": "ini cfg", "cfg": "cfg ini", "conf": "conf",
        "md": "markdown md", "rst": "rst", "txt": "text txt plain plaintext", "csv": "csv", "html": "html",
        "htm": "html htm", "css": "css", "scss": "scss css", "sh": "bash sh shell zsh", "bash": "bash sh shell",
        "zsh": "zsh sh shell", "go": "go golang", "rs": "rust rs", "java": "java", "kt": "kotlin kt",
        "c": "c", "h": "c h cpp", "cc": "cpp c++ cc", "cpp": "cpp c++", "hpp": "cpp c++ hpp", "cs": "csharp cs c#",
        "rb": "ruby rb", "php": "php", "swift": "swift", "sql": "sql", "xml": "xml", "lua": "lua", "r": "r",
    }.items()
}
"""File extension → the fence info words that may label a block of such a file."""


@dataclass(frozen=True)
class NamedBlock:
    """A fenced block and the file the line before it names."""

    path: str
    """The file name as written (relative to the workspace, or absolute)."""
    content: str
    """The block's text, byte for byte (ends with a newline unless empty)."""
    start: int
    """Offset of the naming line in the reply."""
    exact: bool
    """The line names the file and nothing else (else: a prose line naming exactly one file)."""
    numbered: bool = False
    """Written as a numbered listing (:func:`numbered_listings`), not as a fenced block."""


def file_extension(path: str) -> str:
    """The lower-cased extension of the last path component ("" when it has none)."""
    match = _EXTENSION.search(path.rsplit("/", 1)[-1] if "/" in path else path)
    return match.group(1).lower() if match else ""


def _language_fits(path: str, info: str, exact: bool) -> bool:
    tag = info.split()[0].lower() if info.split() else ""
    if not tag:
        return exact
    ext = file_extension(path)
    return tag == ext or tag in LANGUAGES.get(ext, frozenset())


def _unwrap(text: str) -> str:
    """``text`` without markdown wrapped around it on both sides (``**x**``, `` `x` ``), a
    heading or bullet before it, a ``File:`` label or a colon after it."""
    while True:
        before = text
        text = _MARKUP.sub("", text.strip()).strip().rstrip(":").strip()
        text = _LABEL.sub("", text).strip()
        for mark in _WRAPS:
            if len(text) > 2 * len(mark) and text.startswith(mark) and text.endswith(mark):
                text = text[len(mark):-len(mark)].strip()
                break
        if text == before:
            return text


def exact_name(line: str) -> str | None:
    """The file name when ``line`` holds one and nothing else (markdown aside), else None."""
    text = _unwrap(line)
    if not text or text.startswith("-") or not _PATH.fullmatch(text) or set(text) <= set("./"):
        return None
    return text


def prose_name(line: str) -> str | None:
    """The one file a prose line ending with a colon names, else None."""
    text = line.strip().rstrip("*_ ")
    if not text.endswith(":"):
        return None
    names = {m.group(1).rstrip(".") for m in _IN_PROSE.finditer(text)} - _NOT_FILES
    return names.pop() if len(names) == 1 else None


def _naming_line(text: str, fence_start: int) -> tuple[str, int] | None:
    """The line before the fence (or before one blank line there) and its offset."""
    before = text[:fence_start]
    if not before.endswith("\n"):
        return None
    lines = before[:-1].split("\n")
    offset = len(before) - 1
    for _ in range(2):
        line = lines.pop() if lines else ""
        offset -= len(line)
        if line.strip():
            return line, offset
        if not lines:
            return None
        offset -= 1
    return None


def named_blocks(text: str) -> list[NamedBlock]:
    """Every closed fenced block of ``text`` preceded by a line naming a file, in order."""
    found: list[NamedBlock] = []
    for fence in _FENCE.finditer(text):
        naming = _naming_line(text, fence.start())
        if naming is None:
            continue
        line, start = naming
        path, exact = exact_name(line), True
        if path is None or (not file_extension(path) and not _bare_name_fits(line, path)):
            path, exact = prose_name(line), False
        if path is None or not _language_fits(path, fence.group("info"), exact):
            continue
        found.append(NamedBlock(path, fence.group("body"), start, exact))
    return found


def _bare_name_fits(line: str, path: str) -> bool:
    """A name without extension (``Makefile``) counts only when the line marks it as a file
    name (backticks, bold, a heading, a ``File:`` label); plain words ("Output") do not."""
    return line.strip().rstrip(":").strip() != path


def fenced_bodies(text: str) -> list[str]:
    """The bodies of the closed fenced blocks of ``text``."""
    return [m.group("body") for m in _FENCE.finditer(text)]


_REMARK = re.compile(r"(?<=\S)[ \t]+\([^()\n]*\)[ \t]*$")
_NUMBERED = re.compile(r"^[ \t]*(\d{1,7}) \|(?: (.*))?$")


def numbered_listings(text: str) -> list[NamedBlock]:
    """Every listing of a whole file in read_file's numbered form, under a line naming the file
    (at most one blank line between): numbered from 1 without a gap, and ended by the end of the
    text, a blank line or a heading. Anything else (a listing from line 40, a number skipped,
    code going on unnumbered) is no listing: its text may be a part of the file only."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    found: list[NamedBlock] = []
    i = 0
    while i < len(lines):
        first = _NUMBERED.match(lines[i])
        if first is None or first.group(1) != "1":
            i += 1
            continue
        body: list[str] = []
        j = i
        while j < len(lines) and (row := _NUMBERED.match(lines[j])) and int(row.group(1)) == len(body) + 1:
            body.append(row.group(2) or "")
            j += 1
        after = lines[j] if j < len(lines) else ""
        naming = next((k for k in (i - 1, i - 2) if k >= 0 and lines[k].strip()), None)
        if naming is not None and all(not lines[k].strip() for k in range(naming + 1, i)) \
                and (not after.strip() or after.lstrip().startswith("#")):
            heading = _REMARK.sub("", lines[naming])  # "## test_x.py (a test of x.py)", as codeloop heads them
            path = exact_name(heading)
            if path is not None and (file_extension(path) or _bare_name_fits(heading, path)):
                found.append(NamedBlock(path, "\n".join(body) + "\n", offsets[naming], True, numbered=True))
        i = j
    return found
