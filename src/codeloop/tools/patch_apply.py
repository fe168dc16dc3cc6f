"""Applying a parsed v4a patch to a workspace, exactly as codex does (``lib.rs``).

Hunks apply in order; a failure stops the patch and leaves the earlier hunks applied
(codex's partial success, fixture 015). Every file operation goes through the
``ExecutionEnvironment`` (so the resolver judges every path and each write is
atomic). Updated files always end with a newline.

Cost is linear in file size plus patch size: the searches move forward through the
file, the whitespace-insensitive line keys are built at most once per file and pass,
and the new file is assembled in one forward pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.tools.errors import PatchError
from codeloop.tools.patch_parser import (
    RUST_WHITESPACE,
    AddFile,
    DeleteFile,
    Hunk,
    UpdateChunk,
    UpdateFile,
    rust_trim,
)

PUNCTUATION_TO_ASCII = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
    }
)
"""Typographic punctuation → ASCII, one code point to one (codex's ``normalise``)."""


def _trim_end(line: str) -> str:
    return line.rstrip(RUST_WHITESPACE)


def _normalise(line: str) -> str:
    return rust_trim(line).translate(PUNCTUATION_TO_ASCII)


_PASSES: tuple[Callable[[str], str] | None, ...] = (None, _trim_end, rust_trim, _normalise)
"""codex's seek_sequence passes: exact, trim_end, trim, Unicode-normalised."""


@dataclass
class PatchOutcome:
    """Which paths a patch added, modified and deleted (as written in the patch)."""

    added: list[str] = field(default_factory=list)
    """``A`` lines of the summary."""
    modified: list[str] = field(default_factory=list)
    """``M`` lines (the destination for moves)."""
    deleted: list[str] = field(default_factory=list)
    """``D`` lines."""

    def summary(self) -> str:
        """codex's success text: ``Success. Updated the following files:`` then one line each."""
        lines = ["Success. Updated the following files:"]
        lines += [f"A {p}" for p in self.added]
        lines += [f"M {p}" for p in self.modified]
        lines += [f"D {p}" for p in self.deleted]
        return "\n".join(lines) + "\n"

    @property
    def empty(self) -> bool:
        """True when nothing was changed."""
        return not (self.added or self.modified or self.deleted)


class PatchApplyError(PatchError):
    """A hunk could not be applied; ``partial`` lists what earlier hunks already changed."""

    def __init__(self, message: str, partial: PatchOutcome) -> None:
        super().__init__(message)
        self.message = message
        self.partial = partial


async def apply_hunks(env: ExecutionEnvironment, hunks: Sequence[Hunk]) -> PatchOutcome:
    """Apply ``hunks`` in order; raise :class:`PatchApplyError` at the first failure."""
    outcome = PatchOutcome()
    if not hunks:
        raise PatchApplyError("No files were modified.", outcome)
    for hunk in hunks:
        try:
            await _apply_one(env, hunk, outcome)
        except PatchApplyError:
            raise
        except (WorkspaceError, PatchError, OSError) as exc:
            raise PatchApplyError(_failure_text(hunk, exc), outcome) from exc
    return outcome


async def _apply_one(env: ExecutionEnvironment, hunk: Hunk, outcome: PatchOutcome) -> None:
    if isinstance(hunk, AddFile):
        await env.write_file(hunk.path, hunk.contents)
        outcome.added.append(hunk.path)
    elif isinstance(hunk, DeleteFile):
        await env.delete_file(hunk.path)
        outcome.deleted.append(hunk.path)
    else:
        new_contents = await derive_new_contents(env, hunk)
        if hunk.move_path is not None:
            await env.write_file(hunk.move_path, new_contents)
            await env.delete_file(hunk.path)
            outcome.modified.append(hunk.move_path)
        else:
            await env.write_file(hunk.path, new_contents)
            outcome.modified.append(hunk.path)


def _failure_text(hunk: Hunk, exc: Exception) -> str:
    if isinstance(exc, PatchError):
        return str(exc)
    if isinstance(hunk, AddFile):
        return f"Failed to write file {hunk.path}: {exc}"
    if isinstance(hunk, DeleteFile):
        return f"Failed to delete file {hunk.path}: {exc}"
    return f"Failed to update file {hunk.path}: {exc}"


async def derive_new_contents(env: ExecutionEnvironment, hunk: UpdateFile) -> str:
    """The updated text of ``hunk.path`` (not written)."""
    try:
        raw = await env.read_bytes(hunk.path)
        original = raw.decode("utf-8")
    except (WorkspaceError, OSError) as exc:
        raise PatchError(f"Failed to read file to update {hunk.path}: {exc}") from exc
    except UnicodeDecodeError:
        raise PatchError(
            f"Failed to read file to update {hunk.path}: stream did not contain valid UTF-8"
        ) from None
    lines = original.split("\n")
    if lines[-1] == "":
        lines.pop()
    replacements = compute_replacements(lines, hunk.path, hunk.chunks)
    new_lines = apply_replacements(lines, replacements)
    if not new_lines or new_lines[-1] != "":
        new_lines.append("")
    return "\n".join(new_lines)


Replacement = tuple[int, int, Sequence[str]]
"""``(start index, number of old lines, new lines)``."""


def compute_replacements(lines: list[str], path: str, chunks: Sequence[UpdateChunk]) -> list[Replacement]:
    """Locate each chunk after the previous one (codex ``compute_replacements``)."""
    seeker = _Seeker(lines)
    replacements: list[Replacement] = []
    line_index = 0
    for chunk in chunks:
        if chunk.change_context is not None:
            found = seeker.seek((chunk.change_context,), line_index, eof=False)
            if found is None:
                raise PatchError(f"Failed to find context '{chunk.change_context}' in {path}")
            line_index = found + 1
        if not chunk.old_lines:
            at_end = len(lines) - 1 if lines and lines[-1] == "" else len(lines)
            replacements.append((at_end, 0, chunk.new_lines))
            continue
        pattern: Sequence[str] = chunk.old_lines
        new_slice: Sequence[str] = chunk.new_lines
        found = seeker.seek(pattern, line_index, chunk.is_end_of_file)
        if found is None and pattern[-1] == "":
            pattern = pattern[:-1]
            if new_slice and new_slice[-1] == "":
                new_slice = new_slice[:-1]
            found = seeker.seek(pattern, line_index, chunk.is_end_of_file)
        if found is None:
            old = "\n".join(chunk.old_lines)
            raise PatchError(f"Failed to find expected lines in {path}:\n{old}")
        replacements.append((found, len(pattern), new_slice))
        line_index = found + len(pattern)
    replacements.sort(key=lambda r: r[0])
    return replacements


def apply_replacements(lines: list[str], replacements: list[Replacement]) -> list[str]:
    """Splice sorted replacements in; one forward pass when they do not overlap."""
    result: list[str] = []
    position = 0
    for start, old_len, new in replacements:
        if start < position or start + old_len > len(lines):
            return _apply_replacements_like_codex(lines, replacements)
        result.extend(lines[position:start])
        result.extend(new)
        position = start + old_len
    result.extend(lines[position:])
    return result


def _apply_replacements_like_codex(lines: list[str], replacements: list[Replacement]) -> list[str]:
    """codex's reverse-order splice, for the rare overlapping case (quadratic but exact)."""
    lines = list(lines)
    for start, old_len, new in reversed(replacements):
        for _ in range(old_len):
            if start < len(lines):
                del lines[start]
        for offset, line in enumerate(new):
            lines.insert(start + offset, line)
    return lines


class _Seeker:
    """codex's ``seek_sequence`` over one file, with each pass's line keys built once."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self._keys: dict[int, list[str]] = {}

    def seek(self, pattern: Sequence[str], start: int, eof: bool) -> int | None:
        lines = self._lines
        if not pattern:
            return start
        if len(pattern) > len(lines):
            return None
        search_start = len(lines) - len(pattern) if eof else start
        last_start = len(lines) - len(pattern)
        for number, transform in enumerate(_PASSES):
            keys = self._key_lines(number, transform)
            wanted = list(pattern) if transform is None else [transform(p) for p in pattern]
            found = _find_run(keys, wanted, search_start, last_start)
            if found is not None:
                return found
        return None

    def _key_lines(self, number: int, transform: Callable[[str], str] | None) -> list[str]:
        if transform is None:
            return self._lines
        if number not in self._keys:
            self._keys[number] = [transform(line) for line in self._lines]
        return self._keys[number]


def _find_run(keys: list[str], wanted: list[str], first: int, last: int) -> int | None:
    """Smallest ``i`` in ``[first, last]`` with ``keys[i:i+len(wanted)] == wanted``."""
    head = wanted[0]
    size = len(wanted)
    i = first
    while i <= last:
        try:
            i = keys.index(head, i, last + 1)
        except ValueError:
            return None
        if size == 1 or keys[i + 1 : i + size] == wanted[1:]:
            return i
        i += 1
    return None
