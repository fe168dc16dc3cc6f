"""Applying a parsed v4a patch to a workspace: all or nothing, byte-exact (issue 19).

The whole patch is planned first (:class:`_Plan`): every path is resolved through the
environment (so its one resolver judges it), every file read, every new content computed,
in patch order, against an in-memory view of the files the patch already changed. Only
then is anything written, each file atomically through ``workspace_ops`` (the one writer); if a write fails
midway, the files already written are restored from the plan's originals (files the patch
created are removed). A crash (power loss, kill -9) between two writes can still leave
the files already written: there is no journal.

Hunks are located as codex does (exact, then ignoring trailing whitespace, surrounding
whitespace, Unicode punctuation), but tolerant matching only decides *where* a hunk
applies: context lines keep the file's bytes, only ``-`` lines are replaced, and new
lines take the file's dominant line ending. A file keeps its BOM and final-newline state.

``partial=True`` is codex's standalone binary (fixture 015): each hunk is planned and
written on its own, so a failure leaves the earlier hunks applied.

Cost is linear in file size plus patch size: the searches move forward through the
file, the whitespace-insensitive line keys are built at most once per file and pass,
and the new file is assembled in one forward pass.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import FileNotFoundInWorkspaceError, WorkspaceError
from codeloop.environments.local import decode_text
from codeloop.tools import workspace_ops as ops
from codeloop.tools.errors import PatchError, ToolError
from codeloop.tools.patch_parser import (
    RUST_WHITESPACE,
    AddFile,
    DeleteFile,
    Hunk,
    UpdateChunk,
    rust_trim,
)
from codeloop.tools.text_endings import (
    dominant_ending,
    settle_line_ends,
    split_bom,
    split_keeping_ends,
    strip_ending,
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


_PASSES: tuple[Callable[[str], str], ...] = (
    str,  # the line itself
    lambda line: line.rstrip(RUST_WHITESPACE),
    rust_trim,
    lambda line: rust_trim(line).translate(PUNCTUATION_TO_ASCII),
)
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
    written: dict[str, bytes | None] = field(default_factory=dict)
    """The bytes each changed file now holds (None: deleted), by the path the patch used."""

    def summary(self) -> str:
        """codex's success text: ``Success. Updated the following files:`` then one line each."""
        groups = (("A", self.added), ("M", self.modified), ("D", self.deleted))
        lines = [f"{mark} {p}" for mark, paths in groups for p in paths]
        return "\n".join(["Success. Updated the following files:", *lines]) + "\n"

    @property
    def empty(self) -> bool:
        """True when nothing was changed."""
        return not (self.added or self.modified or self.deleted)

    def extend(self, other: PatchOutcome) -> None:
        """Append ``other``'s paths (partial mode collects one hunk at a time)."""
        self.added += other.added
        self.modified += other.modified
        self.deleted += other.deleted
        self.written.update(other.written)


class PatchApplyError(PatchError):
    """A hunk could not be applied; ``partial`` lists what earlier hunks already changed
    (always empty unless the patch was applied with ``partial=True``)."""

    def __init__(self, message: str, partial: PatchOutcome) -> None:
        super().__init__(message)
        self.message = message
        self.partial = partial


NOTHING_WRITTEN = "Nothing was written: a patch applies completely or not at all. Fix it and send the whole patch again."


CheckRead = Callable[[str, bytes], None]
"""Called with each existing file the patch reads and its bytes; raises ``ToolError`` to
refuse the patch (the tool's check that the session saw this version)."""


async def apply_hunks(
    env: ExecutionEnvironment, hunks: Sequence[Hunk], *, partial: bool = False, check: CheckRead | None = None,
    before_change: ops.BeforeChange | None = None,
) -> PatchOutcome:
    """Apply ``hunks`` as one change; raise :class:`PatchApplyError` naming the first
    refused hunk with nothing written. ``partial=True``: hunk by hunk, like codex's binary.
    ``before_change`` hears each write and delete (restores included) right before it."""
    if not hunks:
        raise PatchApplyError("No files were modified.", PatchOutcome())
    if not partial:
        plan = await _Plan.of(env, hunks, NOTHING_WRITTEN, check, before_change)
        await plan.commit()
        return plan.outcome
    outcome = PatchOutcome()
    for hunk in hunks:
        try:
            plan = await _Plan.of(env, (hunk,), "", check, before_change)
            await plan.commit()
        except PatchApplyError as exc:
            raise PatchApplyError(exc.message, outcome) from exc
        outcome.extend(plan.outcome)
    return outcome


@dataclass
class _File:
    """One file the patch touches: what it held before and what it will hold (None: absent)."""

    path: str
    """The path as the patch first wrote it; every read and write uses it."""
    original: bytes | None
    current: bytes | None


class _Plan:
    """The whole patch, computed in memory before anything is written."""

    def __init__(self, env: ExecutionEnvironment, check: CheckRead | None,
                 before_change: ops.BeforeChange | None = None) -> None:
        self.env = env
        self.check = check
        self.before_change = before_change
        self.files: dict[str, _File] = {}
        """By resolved workspace path, so ``m.txt`` and ``./m.txt`` are one file."""
        self.outcome = PatchOutcome()

    @classmethod
    async def of(cls, env: ExecutionEnvironment, hunks: Sequence[Hunk], note: str, check: CheckRead | None,
                 before_change: ops.BeforeChange | None = None) -> _Plan:
        plan = cls(env, check, before_change)
        for hunk in hunks:
            try:
                await plan.add(hunk)
            except (WorkspaceError, ToolError, OSError) as exc:
                text = _failure_text(hunk, exc)
                raise PatchApplyError(f"{text}\n{note}" if note else text, PatchOutcome()) from exc
        return plan

    async def add(self, hunk: Hunk) -> None:
        if isinstance(hunk, AddFile):
            entry = await self._target(hunk.path)
            entry.current = hunk.contents.encode("utf-8")
            self.outcome.added.append(hunk.path)
        elif isinstance(hunk, DeleteFile):
            entry, _ = await self._existing(hunk.path)
            entry.current = None
            self.outcome.deleted.append(hunk.path)
        else:
            try:
                entry, data = await self._existing(hunk.path)
            except WorkspaceError as exc:
                raise PatchError(f"Failed to read file to update {hunk.path}: {exc}") from None
            new = updated_bytes(data, hunk.path, hunk.chunks)
            destination = entry
            if hunk.move_path is not None:
                # Keys are resolved paths, so a move onto itself finds this same entry.
                entry.current = None
                destination = await self._target(hunk.move_path)
            destination.current = new
            self.outcome.modified.append(hunk.move_path or hunk.path)

    async def _locate(self, path: str) -> tuple[str, bool | None]:
        """The resolved workspace path and whether it is a directory (None: nothing there)."""
        try:
            info = await self.env.stat(path)
            return info.path, info.is_dir
        except FileNotFoundInWorkspaceError:
            pass
        parent, name = posixpath.split(path)
        if not parent or parent == path:
            return posixpath.normpath(path), None
        # Components that do not exist yet are literal, so the key is the resolved parent
        # plus the rest; a parent that is a file can never hold it.
        parent_key, parent_is_dir = await self._locate(parent)
        if parent_is_dir is False:
            raise PatchError(f"Failed to write file {path}: its parent {parent} is a file, not a directory")
        return posixpath.normpath(posixpath.join(parent_key, name)), None

    async def _target(self, path: str) -> _File:
        """The entry a write to ``path`` replaces (created with its original bytes if any)."""
        key, is_dir = await self._locate(path)
        entry = self.files.get(key)
        if entry is None:
            if is_dir:
                raise PatchError(f"Failed to write file {path}: it is a directory")
            original = None if is_dir is None else await self._read(path)
            entry = self.files[key] = _File(path, original, original)
        return entry

    async def _existing(self, path: str) -> tuple[_File, bytes]:
        """The entry of a file that must exist now (on disk, or after earlier hunks)."""
        key, _ = await self._locate(path)
        entry = self.files.get(key)
        if entry is None:
            data = await self._read(path)
            entry = self.files[key] = _File(path, data, data)
        if entry.current is None:
            raise FileNotFoundInWorkspaceError(
                f"No such file or directory: {path!r} (an earlier part of this patch deleted or moved it)",
                path=path,
            )
        return entry, entry.current

    async def _read(self, path: str) -> bytes:
        data = await ops.read_bytes(self.env, path)
        if self.check is not None:
            self.check(path, data)
        return data

    async def commit(self) -> None:
        """Write every changed file, deletions last (a move never loses its source); on a
        failure restore what was written and raise."""
        changed = [f for f in self.files.values() if f.current != f.original]
        changed.sort(key=lambda f: f.current is None)
        done: list[_File] = []
        for entry in changed:
            try:
                await self._put(entry.path, entry.current)
            except (WorkspaceError, OSError) as exc:
                action = "delete" if entry.current is None else "write"
                raise PatchApplyError(
                    f"Failed to {action} file {entry.path}: {exc}\n{await self._restore(done)}", PatchOutcome()
                ) from exc
            done.append(entry)
            self.outcome.written[entry.path] = entry.current

    async def _restore(self, done: list[_File]) -> str:
        lost: list[str] = []
        for entry in reversed(done):
            try:
                await self._put(entry.path, entry.original)
            except (WorkspaceError, OSError) as exc:
                lost.append(f"{entry.path} ({exc})")
        if lost:
            return "The patch was stopped, but these files could not be restored: " + "; ".join(lost)
        if done:
            return "Nothing was written: the files already written by this patch were restored."
        return "Nothing was written."

    async def _put(self, path: str, data: bytes | None) -> None:
        """Make ``path`` hold ``data`` (None: delete it)."""
        if data is None:
            await ops.delete_file(self.env, path, before_change=self.before_change)
        else:
            await ops.write_file(self.env, path, data, before_change=self.before_change)


def _failure_text(hunk: Hunk, exc: Exception) -> str:
    if isinstance(exc, ToolError):  # a PatchError, or the caller's check refused a file
        return str(exc)
    action = "write" if isinstance(hunk, AddFile) else "delete" if isinstance(hunk, DeleteFile) else "update"
    return f"Failed to {action} file {hunk.path}: {exc}"


def updated_bytes(data: bytes, path: str, chunks: Sequence[UpdateChunk]) -> bytes:
    """The new bytes of a file holding ``data`` after ``chunks``: BOM, line endings and
    final-newline state kept, untouched and context lines byte for byte."""
    try:
        text = decode_text(data, path)
    except WorkspaceError as exc:
        raise PatchError(f"Failed to read file to update {path}: {exc}") from None
    bom, body = split_bom(text)
    lines = split_keeping_ends(body)
    ending = dominant_ending(lines)
    replacements = compute_replacements([strip_ending(line) for line in lines], path, chunks)
    new_lines = apply_replacements(lines, replacements, ending)
    final_newline = not lines or lines[-1].endswith("\n")
    return (bom + "".join(settle_line_ends(new_lines, ending, final_newline))).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Kept:
    """A context line of a hunk: the file's own line ``offset`` lines into the match stays."""

    offset: int
    text: str
    """The patch's spelling, used only where there is no file line to keep."""


NewLine = str | Kept
Replacement = tuple[int, int, Sequence[NewLine]]
"""``(start index, number of old lines, new lines)``."""


def _new_lines(chunk: UpdateChunk, old_len: int) -> list[NewLine]:
    if not chunk.sources:
        return list(chunk.new_lines)
    return [
        Kept(source, text) if 0 <= source < old_len else text
        for source, text in zip(chunk.sources, chunk.new_lines, strict=True)
    ]


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
        found = seeker.seek(pattern, line_index, chunk.is_end_of_file)
        new_slice = _new_lines(chunk, len(pattern))
        if found is None and pattern[-1] == "":
            pattern = pattern[:-1]
            new_slice = _new_lines(chunk, len(pattern))
            if chunk.new_lines and chunk.new_lines[-1] == "":
                new_slice = new_slice[:-1]
            found = seeker.seek(pattern, line_index, chunk.is_end_of_file)
        if found is None:
            old = "\n".join(chunk.old_lines)
            raise PatchError(f"Failed to find expected lines in {path}:\n{old}")
        replacements.append((found, len(pattern), new_slice))
        line_index = found + len(pattern)
    replacements.sort(key=lambda r: r[0])
    return replacements


def apply_replacements(lines: Sequence[str], replacements: list[Replacement], ending: str = "") -> list[str]:
    """Splice sorted replacements in; one forward pass when they do not overlap.

    A :class:`Kept` line is the file's line as it is; added text gets ``ending``."""
    result: list[str] = []
    position = 0
    for start, old_len, new in replacements:
        if start < position or start + old_len > len(lines):
            return _apply_replacements_like_codex(lines, replacements, ending)
        result.extend(lines[position:start])
        result.extend(lines[start + item.offset] if isinstance(item, Kept) else item + ending for item in new)
        position = start + old_len
    result.extend(lines[position:])
    return result


def _apply_replacements_like_codex(lines: Sequence[str], replacements: list[Replacement], ending: str) -> list[str]:
    """codex's reverse-order splice, for the rare overlapping case (quadratic but exact)."""
    out = list(lines)
    for start, old_len, new in reversed(replacements):
        rendered = [
            out[start + item.offset] if isinstance(item, Kept) and start + item.offset < len(out)
            else (item.text if isinstance(item, Kept) else item) + ending
            for item in new
        ]
        del out[start : start + old_len]
        out[start:start] = rendered
    return out


class _Seeker:
    """codex's ``seek_sequence`` over one file, with each pass's line keys built once."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self._keys: dict[int, list[str]] = {0: lines}  # by pass; the first pass is the lines

    def seek(self, pattern: Sequence[str], start: int, eof: bool) -> int | None:
        lines = self._lines
        if not pattern:
            return start
        if len(pattern) > len(lines):
            return None
        search_start = len(lines) - len(pattern) if eof else start
        for number, transform in enumerate(_PASSES):
            keys = self._keys.get(number)
            if keys is None:
                keys = self._keys[number] = [transform(line) for line in lines]
            found = find_run(keys, [transform(p) for p in pattern], search_start, len(lines) - len(pattern))
            if found is not None:
                return found
        return None


def find_run(keys: list[str], wanted: list[str], first: int, last: int) -> int | None:
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
