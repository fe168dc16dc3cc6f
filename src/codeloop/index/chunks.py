"""Splitting file text into searchable chunks.

Search ranks chunks, not whole files, so a hit points at lines. Documents are split at
headings (Markdown ``#`` outside code fences, reStructuredText underlines) and each
chunk carries its heading as the snippet's anchor; code and plain text are split into
fixed windows of :data:`CODE_CHUNK_LINES` lines, headed by the first definition inside.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

CODE_CHUNK_LINES = 60
DOC_SECTION_MAX_LINES = 120

_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")


@dataclass(frozen=True)
class Chunk:
    """A slice of a file, indexed as one search document."""

    start_line: int
    """1-based first line."""
    end_line: int
    """1-based last line (inclusive)."""
    heading: str
    """Section heading (documents) or first definition (code); may be empty."""
    body: str
    """The lines' text."""


def _windows(lines: Sequence[str], start: int, end: int, heading: str, size: int) -> list[Chunk]:
    bounds = ((first, min(first + size, end)) for first in range(start, end, size))
    return [Chunk(first + 1, last, heading, "\n".join(lines[first:last])) for first, last in bounds]


def document_chunks(text: str) -> list[Chunk]:
    """Sections of a Markdown/reST/text document, each headed by its heading."""
    lines = text.split("\n")
    starts: list[tuple[int, str]] = [(0, "")]
    in_fence = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        match = _MD_HEADING.match(line)
        if match:
            starts.append((i, match.group(2)))
        elif (i > 0 and _RST_UNDERLINE.match(line) and lines[i - 1].strip()
              and len(stripped) >= len(lines[i - 1].strip()) and not _RST_UNDERLINE.match(lines[i - 1])):
            starts.append((i - 1, lines[i - 1].strip()))
    chunks: list[Chunk] = []
    bounds = [*starts, (len(lines), "")]
    for (first, heading), (nxt, _) in pairwise(bounds):
        if nxt > first:
            chunks.extend(_windows(lines, first, nxt, heading, DOC_SECTION_MAX_LINES))
    return [c for c in chunks if c.body.strip()] or _windows(lines, 0, len(lines), "", DOC_SECTION_MAX_LINES)


def code_chunks(text: str, definitions: Sequence[tuple[int, str]]) -> list[Chunk]:
    """Fixed windows of a code file; ``definitions`` are ``(start_line, qualified_name)``
    sorted by line, used to head each window."""
    lines = text.split("\n")
    chunks = []
    index = 0
    current = ""
    for first in range(0, max(len(lines), 1), CODE_CHUNK_LINES):
        last = min(first + CODE_CHUNK_LINES, len(lines))
        heading = ""
        while index < len(definitions) and definitions[index][0] <= last:
            if not heading and definitions[index][0] > first:
                heading = definitions[index][1]
            current = definitions[index][1]
            index += 1
        chunks.append(Chunk(first + 1, last, heading or current, "\n".join(lines[first:last])))
    return chunks
