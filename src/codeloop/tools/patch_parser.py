"""Parser of the v4a patch format (loop spec Appendix A), with codex's leniency.

Behaviour and error texts follow codex's ``apply-patch`` crate (``parser.rs``):
markers are matched after trimming, a patch wrapped in a heredoc (``<<'EOF'`` …
``EOF``, or ``apply_patch <<'EOF'`` … ``EOF``) is unwrapped, the first chunk of an
update may omit ``@@``, blank lines between chunks are skipped. The parser never
touches files; :func:`parse_patch` either returns a :class:`Patch` or raises
:class:`PatchParseError` with codex's message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codeloop.tools.errors import PatchError

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File: "
DELETE_FILE = "*** Delete File: "
UPDATE_FILE = "*** Update File: "
MOVE_TO = "*** Move to: "
END_OF_FILE = "*** End of File"

# Rust's char::is_whitespace set (codex trims with it); Python's str.strip() also
# strips \x1c-\x1f, which Rust keeps.
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

_SHELL_HEREDOC = re.compile(r"^(?:apply_patch|applypatch)\s+<<\s*(['\"]?)(\w+)\1\s*$")


def rust_trim(text: str) -> str:
    """``str::trim`` of Rust."""
    return text.strip(RUST_WHITESPACE)


class PatchParseError(PatchError):
    """The patch text is not valid v4a; ``str(error)`` is codex's message."""

    def __init__(self, message: str, line_number: int | None = None) -> None:
        self.message = message
        self.line_number = line_number
        if line_number is None:
            text = f"Invalid patch: {message}"
        else:
            text = f"Invalid patch hunk on line {line_number}: {message}"
        super().__init__(text)


@dataclass(frozen=True)
class AddFile:
    """``*** Add File: path`` with its ``+`` lines."""

    path: str
    """Path as written in the patch."""
    contents: str
    """The new file's text; every line ends with ``\\n``."""


@dataclass(frozen=True)
class DeleteFile:
    """``*** Delete File: path``."""

    path: str
    """Path as written in the patch."""


@dataclass(frozen=True)
class UpdateChunk:
    """One ``@@`` section of an update."""

    change_context: str | None
    """The text after ``@@ `` (a line to seek before matching), or None."""
    old_lines: tuple[str, ...]
    """Context and removed lines, in order: what must be found in the file."""
    new_lines: tuple[str, ...]
    """Context and added lines: what replaces ``old_lines``."""
    is_end_of_file: bool = False
    """True when followed by ``*** End of File``: ``old_lines`` should end the file."""
    sources: tuple[int, ...] = ()
    """For each of ``new_lines``: the index in ``old_lines`` of the context line it repeats,
    or -1 for an added line. Context lines keep the file's bytes (only ``-`` lines are
    replaced); empty means every new line is added text."""


@dataclass(frozen=True)
class UpdateFile:
    """``*** Update File: path`` with an optional move and its chunks."""

    path: str
    """Path as written in the patch."""
    move_path: str | None
    """Destination of ``*** Move to:``, or None."""
    chunks: tuple[UpdateChunk, ...]
    """The ``@@`` sections, in file order."""


Hunk = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True)
class Patch:
    """A parsed patch."""

    hunks: tuple[Hunk, ...]
    """File operations in patch order (may be empty: applying then fails)."""


def parse_patch(text: str) -> Patch:
    """Parse ``text`` leniently, as codex does (``ParseMode::Lenient``)."""
    lines = _rust_lines(rust_trim(text))
    body = _patch_body(lines)
    hunks: list[Hunk] = []
    index = 0
    while index < len(body):
        hunk, used = _parse_one_hunk(body, index, index + 2)  # body starts at the patch's line 2
        hunks.append(hunk)
        index += used
    return Patch(tuple(hunks))


def _rust_lines(text: str) -> list[str]:
    """``str::lines`` of Rust: split on ``\\n``, drop one trailing ``\\r`` per line."""
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


def _patch_body(lines: list[str]) -> list[str]:
    try:
        return _strict_body(lines)
    except PatchParseError as original:
        if len(lines) >= 4:
            first, last = lines[0], lines[-1]
            heredoc = first in ("<<EOF", "<<'EOF'", '<<"EOF"') and last.endswith("EOF")
            shell = _SHELL_HEREDOC.match(rust_trim(first))
            if heredoc or (shell is not None and rust_trim(last) == shell.group(2)):
                return _strict_body(lines[1:-1])
        raise original from None


def _strict_body(lines: list[str]) -> list[str]:
    first = rust_trim(lines[0]) if lines else None
    last = rust_trim(lines[-1]) if lines else None
    if first == BEGIN_PATCH and last == END_PATCH and len(lines) >= 2:
        return lines[1:-1]
    if first != BEGIN_PATCH:
        raise PatchParseError("The first line of the patch must be '*** Begin Patch'")
    raise PatchParseError("The last line of the patch must be '*** End Patch'")


def _parse_one_hunk(lines: list[str], start: int, line_number: int) -> tuple[Hunk, int]:
    first = rust_trim(lines[start])
    if first.startswith(ADD_FILE):
        index = start + 1
        while index < len(lines) and lines[index].startswith("+"):
            index += 1
        contents = "".join(line[1:] + "\n" for line in lines[start + 1 : index])
        return AddFile(first[len(ADD_FILE) :], contents), index - start
    if first.startswith(DELETE_FILE):
        return DeleteFile(first[len(DELETE_FILE) :]), 1
    if first.startswith(UPDATE_FILE):
        return _parse_update(lines, start, line_number, first[len(UPDATE_FILE) :])
    raise PatchParseError(
        f"'{first}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', "
        "'*** Delete File: {path}', '*** Update File: {path}'",
        line_number,
    )


def _parse_update(lines: list[str], start: int, line_number: int, path: str) -> tuple[Hunk, int]:
    index = start + 1
    move_path = None
    if index < len(lines) and lines[index].startswith(MOVE_TO):
        move_path = lines[index][len(MOVE_TO) :]
        index += 1
    chunks: list[UpdateChunk] = []
    while index < len(lines):
        if not rust_trim(lines[index]):
            index += 1
            continue
        if lines[index].startswith("*"):
            break
        chunk, chunk_used = _parse_chunk(lines, index, line_number + index - start, not chunks)
        chunks.append(chunk)
        index += chunk_used
    if not chunks:
        raise PatchParseError(f"Update file hunk for path '{path}' is empty", line_number)
    return UpdateFile(path, move_path, tuple(chunks)), index - start


def _parse_chunk(
    lines: list[str], start: int, line_number: int, allow_missing_context: bool
) -> tuple[UpdateChunk, int]:
    head = lines[start]
    context: str | None = None
    if head == "@@":
        skip = 1
    elif head.startswith("@@ "):
        context, skip = head[3:], 1
    elif allow_missing_context:
        skip = 0
    else:
        raise PatchParseError(
            f"Expected update hunk to start with a @@ context marker, got: '{head}'", line_number
        )
    if start + skip >= len(lines):
        raise PatchParseError("Update hunk does not contain any lines", line_number + 1)
    old: list[str] = []
    new: list[str] = []
    sources: list[int] = []
    end_of_file = False
    index = start + skip
    # The hot loop of big patches: one dispatch on the first character per line.
    while index < len(lines):
        line = lines[index]
        marker = line[0] if line else ""
        if marker == " " or marker == "":  # context (an empty line is an empty context line)
            text = line[1:]
            sources.append(len(old))
            old.append(text)
            new.append(text)
        elif marker == "+":
            sources.append(-1)
            new.append(line[1:])
        elif marker == "-":
            old.append(line[1:])
        elif line == END_OF_FILE:
            if index == start + skip:
                raise PatchParseError("Update hunk does not contain any lines", line_number + 1)
            end_of_file = True
            index += 1
            break
        elif index == start + skip:
            raise PatchParseError(
                f"Unexpected line found in update hunk: '{line}'. Every line should start with "
                "' ' (context line), '+' (added line), or '-' (removed line)",
                line_number + 1,
            )
        else:
            break
        index += 1
    kept = tuple(sources) if any(source >= 0 for source in sources) else ()
    return UpdateChunk(context, tuple(old), tuple(new), end_of_file, kept), index - start
