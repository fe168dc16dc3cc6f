"""The workspace operations every face uses: create, read, replace text, replace lines,
delete, run a command (DESIGN.md "one tool pipeline"; redesign issue 18).

The tools, the relay, spaces and codali all change and read files through these
functions, so the is-directory, size and UTF-8 checks, the match rules of a text
replacement and the classification of a command's outcome exist once. A face only
translates: its wire format into these calls, and an :class:`OperationError`'s ``kind``
or a :class:`CommandOutcome`'s ``status`` into the fixed texts its spec gives.

Every failure is an :class:`OperationError` (a ``WorkspaceError``, so the tool pipeline
shows its message unchanged); nothing is written unless every check passed. Callers
that journal their changes (the relay's crash journal) pass ``before_change``, called
right before the change with what is about to happen.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from codeloop.environments.base import ExecResult, ExecutionEnvironment, FileStat, OutputCallback
from codeloop.environments.errors import (
    BinaryFileError,
    FileNotFoundInWorkspaceError,
    FileTooLargeError,
    IsAFileError,
    NotAFileError,
    PathOutsideWorkspaceError,
    WorkspaceError,
)
from codeloop.environments.safe_open import MAX_READ_BYTES, too_large_refusal
from codeloop.tools.text_endings import (
    dominant_ending,
    replacement_text,
    rewritten_text,
    settle_line_ends,
    split_bom,
    split_keeping_ends,
    strip_ending,
    text_dominant_ending,
)

ErrorKind = Literal[
    "outside_workspace", "not_found", "is_directory", "not_a_directory", "not_text", "too_large", "exists",
    "empty_match", "no_match", "ambiguous", "bad_range", "workspace", "io",
]
"""What went wrong; ``not_a_directory`` is a file where a directory is expected (a parent of
the path, a working directory); ``workspace`` is any other refusal of the environment (read-only mode,
permissions, disk full) and ``io`` an operating-system error it did not translate."""

MatchRule = Literal["unique", "first", "all"]
"""Which occurrences a text replacement changes: the only one (more is ``ambiguous``), the
first, or every one."""

CommandStatus = Literal["ok", "failed", "timed_out", "not_started", "killed"]
"""How a command ended: exit 0, another exit status, stopped at its timeout, never started,
or ended by a signal it did not get from its timeout."""

class OperationError(WorkspaceError):
    """A workspace operation refused or failed; nothing was changed.

    ``kind`` says what happened; the message says it for a model or a user (for errors of
    the environment it is the environment's message, unchanged). The other attributes
    carry the numbers a face puts in its own text.
    """

    def __init__(
        self, kind: ErrorKind, message: str, path: str | None = None, *, size: int | None = None,
        limit: int | None = None, count: int | None = None, edit_index: int | None = None,
        offset: int | None = None, binary: bool = False,
    ) -> None:
        super().__init__(message, path=path)
        self.kind: ErrorKind = kind
        self.size = size
        """Bytes of the file or content (``too_large``)."""
        self.limit = limit
        """The byte limit passed (``too_large``)."""
        self.count = count
        """Occurrences found (``ambiguous``) or lines in the file (``bad_range``)."""
        self.edit_index = edit_index
        """0-based index of the failing edit among several (text replacements)."""
        self.offset = offset
        """``not_text``: the offset of the first byte that is not UTF-8."""
        self.binary = binary
        """``not_text``: the file holds NUL bytes (rather than only invalid UTF-8)."""


_KINDS: tuple[tuple[type[WorkspaceError], ErrorKind], ...] = (
    (PathOutsideWorkspaceError, "outside_workspace"),
    (FileNotFoundInWorkspaceError, "not_found"),
    (NotAFileError, "is_directory"),
    (IsAFileError, "not_a_directory"),
    (BinaryFileError, "not_text"),
    (FileTooLargeError, "too_large"),
    (WorkspaceError, "workspace"),
)
"""The kind of each environment error, most specific first (anything else is ``io``)."""


@contextmanager
def _translated(path: str) -> Iterator[None]:
    """Turn the environment's errors inside the block into OperationErrors about ``path``
    (an OperationError without a path gets this one)."""
    try:
        yield
    except OperationError as exc:
        exc.path = exc.path or path
        raise
    except FileTooLargeError as exc:
        raise OperationError("too_large", str(exc), path, size=exc.size, limit=exc.limit) from exc
    except (WorkspaceError, OSError) as exc:
        kind: ErrorKind = next((kind for cls, kind in _KINDS if isinstance(exc, cls)), "io")
        raise OperationError(kind, str(exc), path) from exc


def _is_directory(path: str) -> OperationError:
    return OperationError("is_directory", f"{path!r} is a directory, not a file", path)


# -- pure text operations -------------------------------------------------------------------


@dataclass(frozen=True)
class TextEdit:
    """Replace ``old`` with ``new``."""

    old: str
    new: str


def replace_text(text: str, old: str, new: str, match: MatchRule = "unique") -> tuple[str, int]:
    """``text`` with ``old`` replaced per ``match``, and how many places changed.

    Raises ``OperationError`` ``empty_match`` (``old`` is empty), ``no_match`` or, for
    ``unique``, ``ambiguous`` (with ``count``).
    """
    if old == "":
        raise OperationError("empty_match", "the text to replace is empty")
    count = text.count(old)
    if count == 0:
        raise OperationError("no_match", "the text to replace was not found")
    if match == "first":
        at = text.find(old)
        return text[:at] + new + text[at + len(old):], 1
    if count > 1 and match == "unique":
        raise OperationError("ambiguous", f"the text to replace occurs {count} times", count=count)
    return text.replace(old, new), count


def replace_lines(original: str, start_line: int, end_line: int, replacement: str) -> str:
    """Replace lines ``start_line..end_line`` (1-based, inclusive) of ``original``.

    ``replacement`` is split into lines the same way; an empty one deletes the range.
    Beyond a plain splice (faults of the relay's original agent we do not repeat): the
    replacement lines get the file's dominant terminator (``\\r\\n`` or ``\\n``) and
    untouched lines are not rewritten; the file keeps its final newline or its lack of
    one; a UTF-8 byte-order mark at the start survives an edit of line 1; a range past
    the end is refused with the line count (``count``), never clipped. Raises
    ``OperationError`` ``bad_range`` unless ``1 <= start_line <= end_line <= lines``.
    """
    bom, body = split_bom(original)
    lines = split_keeping_ends(body)
    count = len(lines)

    def bad(message: str) -> OperationError:
        return OperationError("bad_range", message, count=count)

    if count == 0:
        raise bad("the file is empty, so it has no lines to replace")
    if start_line < 1:
        raise bad(f"start_line must be 1 or more, got {start_line}")
    if end_line < start_line:
        raise bad(f"end_line {end_line} is before start_line {start_line}")
    if end_line > count:
        raise bad(
            f"end_line {end_line} is past the end of the file, which has {count} line"
            f"{'s' if count != 1 else ''}; read the file again and use a range within 1-{count}"
        )
    ending = dominant_ending(lines)
    new_lines = [strip_ending(line) + ending for line in split_keeping_ends(replacement)]
    result = lines[: start_line - 1] + new_lines + lines[end_line:]
    return bom + "".join(settle_line_ends(result, ending, lines[-1].endswith("\n")))


def edit_text(text: str, edits: Sequence[TextEdit], match: MatchRule = "unique") -> tuple[str, int]:
    """``text`` after ``edits`` in order (each per ``match``, see :func:`replace_text`), and
    the number of places changed. Unlike a plain replacement, the new text's line breaks
    take the file's dominant ending and the lines it shares with the old text keep the
    file's bytes (``text_endings.replacement_text``). A failing edit raises with its
    ``edit_index`` set."""
    changed = 0
    for index, edit in enumerate(edits):
        new = replacement_text(edit.old, edit.old, edit.new, text_dominant_ending(text))
        try:
            text, count = replace_text(text, edit.old, new, match)
        except OperationError as exc:
            exc.edit_index = index
            raise
        changed += count
    return text, changed


# -- files -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedChange:
    """A change about to be made (given to ``before_change``)."""

    kind: Literal["write", "delete", "process"]
    path: str | None = None
    """The path as the caller gave it (write, delete)."""
    data: bytes | None = None
    """The exact bytes about to be written (write)."""
    replaced: bool = False
    """True when an existing file is replaced, False when one is created (write)."""
    command: str | None = None
    """The command about to start (process)."""


@dataclass(frozen=True)
class Written:
    """A completed write."""

    path: str
    bytes_written: int
    replaced: bool
    """True when an existing file was replaced."""
    sha256: str = ""
    """:func:`fingerprint` of the bytes written."""


def fingerprint(data: bytes) -> str:
    """Hex SHA-256 of a file's bytes: how a write is journaled and a file's version known."""
    return hashlib.sha256(data).hexdigest()


BeforeChange = Callable[[PlannedChange], None]
"""Called right before a change, after every check passed; must persist what it needs
(the relay's crash journal) before returning. If it raises, nothing is changed."""


def _encode(path: str, content: str | bytes) -> bytes:
    if isinstance(content, bytes):
        return content
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise OperationError(
            "workspace",
            f"Cannot write {path!r}: the content has characters that are not valid UTF-8 ({exc.reason})",
            path,
        ) from None


async def stat_file(env: ExecutionEnvironment, path: str) -> FileStat:
    """Metadata of an existing regular file (``is_directory`` for a directory)."""
    with _translated(path):
        info = await env.stat(path)
    if info.is_dir:
        raise _is_directory(path)
    return info


async def read_bytes(env: ExecutionEnvironment, path: str, *, max_bytes: int | None = None) -> bytes:
    """The bytes of an existing file of at most ``max_bytes`` (``too_large`` otherwise,
    checked before reading). Every read is bounded: without ``max_bytes`` the limit is
    :data:`MAX_READ_BYTES`, the environment's own ceiling, so no face needs a cap of its
    own to keep a huge (or sparse) file out of memory (issue 32)."""
    limit = MAX_READ_BYTES if max_bytes is None else min(max_bytes, MAX_READ_BYTES)
    with _translated(path):
        info = await env.stat(path)
    if not info.is_dir and info.size > limit:  # a directory: the environment's read says so
        message = (str(too_large_refusal(path, info.size, limit)) if max_bytes is None
                   else f"{path!r} is {info.size} bytes, over the {limit}-byte limit")
        raise OperationError("too_large", message, path, size=info.size, limit=limit)
    with _translated(path):
        return await env.read_bytes(path)


def decode_text(data: bytes, path: str) -> str:
    """``data`` as UTF-8, or ``OperationError`` ``not_text`` naming the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OperationError(
            "not_text", f"{path!r} is not valid UTF-8 text (invalid byte at offset {exc.start})", path,
            offset=exc.start, binary=b"\0" in data) from None


async def read_text(env: ExecutionEnvironment, path: str, *, max_bytes: int | None = None) -> str:
    """The text of an existing UTF-8 file (a BOM is kept); see :func:`read_bytes`."""
    return decode_text(await read_bytes(env, path, max_bytes=max_bytes), path)


async def write_file(
    env: ExecutionEnvironment, path: str, content: str | bytes, *, replaced: bool = True,
    before_change: BeforeChange | None = None,
) -> Written:
    """Atomically write ``content`` (no checks: for callers that just read the file)."""
    data = _encode(path, content)
    if before_change is not None:
        before_change(PlannedChange("write", path, data, replaced))
    with _translated(path):
        written = await env.write_file(path, data)
    return Written(path, written, replaced, fingerprint(data))


async def create_file(
    env: ExecutionEnvironment, path: str, content: str | bytes, *, overwrite: bool = True,
    max_bytes: int | None = None, keep_format: bool = True, before_change: BeforeChange | None = None,
) -> Written:
    """Create ``path`` (parents included) or, with ``overwrite``, replace the file there.

    Refuses content over ``max_bytes`` (``too_large``), a directory (``is_directory``) and,
    without ``overwrite``, an existing file (``exists``), in that order. Replacing a UTF-8
    file with UTF-8 content keeps the file's CRLF endings and BOM
    (``text_endings.rewritten_text``) unless ``keep_format`` is False (bytes sent as
    binary); any other content is written as given.
    """
    data = _encode(path, content)
    if max_bytes is not None and len(data) > max_bytes:
        raise OperationError(
            "too_large", f"the content for {path!r} is {len(data)} bytes, over the {max_bytes}-byte limit",
            path, size=len(data), limit=max_bytes)
    with _translated(path):
        # False for a path outside the workspace: the write itself then says why.
        existed = await env.file_exists(path)
        if existed and (await env.stat(path)).is_dir:
            raise _is_directory(path)
    if existed and not overwrite:
        raise OperationError("exists", f"{path!r} already exists", path)
    if existed and keep_format:
        data = await _keeping_format(env, path, data)
    return await write_file(env, path, data, replaced=existed, before_change=before_change)


async def _keeping_format(env: ExecutionEnvironment, path: str, data: bytes) -> bytes:
    try:
        new = data.decode("utf-8")
        existing = decode_text(await read_bytes(env, path), path)
    except (UnicodeDecodeError, OperationError):
        return data  # not text on one side: a whole-file rewrite writes exactly what was sent
    return rewritten_text(existing, new).encode("utf-8")


async def replace_text_in_file(
    env: ExecutionEnvironment, path: str, edits: Sequence[TextEdit], *, match: MatchRule = "unique",
    max_bytes: int | None = None, before_change: BeforeChange | None = None,
) -> int:
    """Apply ``edits`` in order to the text of ``path`` (:func:`edit_text`) and write it
    once; return the number of places changed. All or nothing: a failing edit (its
    ``edit_index`` set) leaves the file untouched."""
    text = await read_text(env, path, max_bytes=max_bytes)
    with _translated(path):
        text, changed = edit_text(text, edits, match)
    await write_file(env, path, text, before_change=before_change)
    return changed


async def replace_lines_in_file(
    env: ExecutionEnvironment, path: str, start_line: int, end_line: int, replacement: str, *,
    before_change: BeforeChange | None = None,
) -> Written:
    """Replace a line range of a UTF-8 file (see :func:`replace_lines`)."""
    original = await read_text(env, path)
    with _translated(path):
        updated = replace_lines(original, start_line, end_line, replacement)
    return await write_file(env, path, updated, before_change=before_change)


async def delete_file(env: ExecutionEnvironment, path: str, *, before_change: BeforeChange | None = None) -> None:
    """Delete an existing file; directories are refused (``is_directory``)."""
    await stat_file(env, path)
    if before_change is not None:
        before_change(PlannedChange("delete", path))
    with _translated(path):
        await env.delete_file(path)


# -- commands -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandOutcome:
    """How one command ended, classified once for every face."""

    status: CommandStatus
    """``ok``, ``failed``, ``timed_out``, ``not_started`` or ``killed``."""
    exit_code: int | None
    """The exit status when the process exited (``ok``, ``failed``), else None."""
    signal: int | None
    """The signal that ended it (``killed``; ``timed_out`` when its kill was needed)."""
    timeout_ms: int
    """The timeout the command ran with."""
    result: ExecResult
    """Everything the environment reported (output, byte counts, spill file, duration)."""

    @property
    def stdout(self) -> str:
        return self.result.stdout

    @property
    def stderr(self) -> str:
        return self.result.stderr

    @property
    def output(self) -> str:
        """stdout and stderr combined."""
        return self.result.output

    @property
    def duration_ms(self) -> int:
        return self.result.duration_ms


def classify(result: ExecResult, timeout_ms: int) -> CommandOutcome:
    """The :class:`CommandOutcome` of an environment's ``ExecResult``."""
    signal = -result.exit_code if result.started and result.exit_code < 0 else None
    if not result.started:
        return CommandOutcome("not_started", None, None, timeout_ms, result)
    if result.timed_out:
        return CommandOutcome("timed_out", None, signal, timeout_ms, result)
    if signal is not None:
        return CommandOutcome("killed", None, signal, timeout_ms, result)
    status: CommandStatus = "ok" if result.exit_code == 0 else "failed"
    return CommandOutcome(status, result.exit_code, None, timeout_ms, result)


async def run_command(
    env: ExecutionEnvironment, command: str, *, timeout_ms: int, working_dir: str | None = None,
    env_vars: dict[str, str] | None = None, on_output: OutputCallback | None = None,
    before_change: BeforeChange | None = None,
) -> CommandOutcome:
    """Run ``command`` in the workspace (the environment's shell, process group killed at
    the timeout) and classify how it ended; never raises for a failing command (a
    ``working_dir`` that is missing, outside or a file raises ``OperationError``)."""
    if working_dir not in (None, "", "."):
        with _translated(working_dir):
            info = await env.stat(working_dir)
        if not info.is_dir:
            raise OperationError("not_a_directory", f"{working_dir!r} is a file, not a directory", working_dir)
    if before_change is not None:
        before_change(PlannedChange("process", command=command))
    with _translated(working_dir or "."):
        result = await env.exec_command(
            command, timeout_ms=timeout_ms, working_dir=working_dir, env_vars=env_vars, on_output=on_output)
    return classify(result, timeout_ms)
