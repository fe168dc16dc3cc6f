"""The ``edit_file`` tool: exact ``old_string`` → ``new_string`` (loop spec §3.3, §3.5).

Order of attempts: the exact text; then the same text with typographic punctuation
(curly quotes, dashes, odd spaces) read as ASCII; then a line match that ignores
whitespace and indentation, re-indenting ``new_string`` to the file's indentation. A
fuzzy success says what it matched. A failure shows the current text around the
closest line so a small model can retry with the right ``old_string``; from the second
failed edit of the same small file in a session, the error also suggests rewriting it
with write_file (issue 10: small models that keep missing are better off). The file is
read as bytes and written back atomically through the environment.

Only what the edit changes is rewritten (issue 19): everything outside the match keeps
its bytes, and inside a fuzzy match the lines that ``old_string`` and ``new_string`` have
in common keep the file's spelling (its whitespace, quotes and line endings): tolerant
matching decides *where* the edit goes, never what the untouched lines become. Line
breaks of ``new_string`` are written with the file's dominant ending (CRLF in a CRLF file).
"""

from __future__ import annotations

import difflib
from collections import OrderedDict
from typing import Any

from codeloop.environments.base import ExecutionEnvironment, GrepOptions
from codeloop.environments.errors import WorkspaceError
from codeloop.tools import workspace_ops as ops
from codeloop.tools.effects import WRITES_FILE_PATH
from codeloop.tools.errors import ToolError
from codeloop.tools.files import SEEN_FILES, number_lines
from codeloop.tools.patch_apply import PUNCTUATION_TO_ASCII, find_run
from codeloop.tools.registry import RegisteredTool, ToolContext, make_tool
from codeloop.tools.text_endings import (
    keep_common_lines,
    replacement_text,
    split_bom,
    strip_ending,
    text_dominant_ending,
)

WINDOW_CONTEXT = 3
"""Lines shown above and below the closest match in a not-found error."""

FAILURES_BEFORE_WRITE_HINT = 2
"""Failed edits of one file (in one session) after which write_file is suggested."""

SMALL_FILE_LINES = 200
"""Files shorter than this are small enough to rewrite whole with write_file."""

MAX_TRACKED_FILES = 512
"""(session, file) pairs whose failed edits are counted at once."""


async def _write_file_hint(env: ExecutionEnvironment, path: str, failures: int) -> str:
    if failures < FAILURES_BEFORE_WRITE_HINT:
        return ""
    try:
        data = await ops.read_bytes(env, path)
    except WorkspaceError:  # a missing or unreadable file already has its own error
        return ""
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if b"\0" in data or lines >= SMALL_FILE_LINES:
        return ""
    return (
        f"\nThis is failed edit number {failures} of {path}, which has only {lines} lines: stop using "
        f"edit_file on it. Call read_file on {path}, then write_file with its complete new content."
    )


async def edit_file(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
    """Replace ``old_string`` with ``new_string`` in ``file_path`` (see module docstring)."""
    path: str = args["file_path"]
    old: str = args["old_string"]
    new: str = args["new_string"]
    replace_all: bool = bool(args.get("replace_all", False))
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change." + await _to_add(env, path, old))
    if old == "":
        return await _create(env, ctx, path, new)
    text = await _read_text(env, path, ctx)
    try:
        updated, count = ops.edit_text(text, [ops.TextEdit(old, new)], "all" if replace_all else "unique")
    except ops.OperationError as exc:
        if exc.kind == "ambiguous":
            raise ToolError(_not_unique(path, text, old, exc.count or 0)) from None
        try:
            updated, note = _fuzzy(path, text, old, new, replace_all)
        except NotFoundError as missing:
            elsewhere = await _found_elsewhere(env, path, old)
            raise NotFoundError(str(missing) + elsewhere, elsewhere=bool(elsewhere)) from None
        await _write(env, ctx, path, updated)
        return note
    await _write(env, ctx, path, updated)
    return f"Edited {path}: {_replacements(count)}."


async def _to_add(env: ExecutionEnvironment, path: str, wanted: str) -> str:
    """How to add ``wanted`` to ``path`` when it is not there yet ("" when it is, or no file).

    Seen with the 1.5B model asked to add a line: old_string and new_string both the new line."""
    try:
        text = ops.decode_text(await ops.read_bytes(env, path), path)
    except (WorkspaceError, OSError, ops.OperationError):
        return ""
    lines = text.splitlines()
    last = next((line for line in reversed(lines) if line.strip()), None)
    if not wanted.strip() or wanted in text or last is None:
        return ""
    if len(lines) < SMALL_FILE_LINES:
        # A small model writes a line break inside a one-line value as the two characters
        # "\n" (seen with the 1.5B model); write_file's content is a block, where it does not.
        return (f" {path} does not contain that text yet. To add it, call write_file with the whole new "
                f"content of {path}: its {len(lines)} current lines, then `{wanted}`.")
    return (f" {path} does not contain that text yet. To add it after the last line, call edit_file with "
            f"old_string `{last}` and new_string holding `{last}`, a line break, then `{wanted}`.")


async def _write(env: ExecutionEnvironment, ctx: ToolContext, path: str, text: str) -> None:
    written = await ops.write_file(env, path, text, before_change=ctx.before_change)
    SEEN_FILES.saw(ctx, env, path, written.sha256)


async def _create(env: ExecutionEnvironment, ctx: ToolContext, path: str, new: str) -> str:
    try:
        written = await ops.create_file(env, path, new, overwrite=False, before_change=ctx.before_change)
        SEEN_FILES.saw(ctx, env, path, written.sha256)
    except ops.OperationError as exc:
        if exc.kind != "exists":
            raise
        raise ToolError(
            f"old_string is empty but {path} already exists. Give the exact text to replace, "
            "or use write_file to replace the whole file."
        ) from None
    return f"Created {path} ({written.bytes_written} bytes)."


async def _read_text(env: ExecutionEnvironment, path: str, ctx: ToolContext) -> str:
    try:
        data = await ops.read_bytes(env, path)
        SEEN_FILES.check_unchanged(ctx, env, path, data)
        text = ops.decode_text(data, path)
    except ops.OperationError as exc:
        if exc.kind == "not_found":
            raise ToolError(f"{exc} To create a new file, call edit_file with an empty old_string or use write_file.") from None
        if exc.kind == "not_text":
            why = "a binary file" if exc.binary else f"not valid UTF-8 text (invalid byte at offset {exc.offset})"
            raise ToolError(f"Cannot edit {path}: it is {why}.") from None
        raise
    if "\0" in text:
        raise ToolError(f"Cannot edit {path}: it is a binary file.")
    return text


def _replacements(count: int) -> str:
    return "1 replacement" if count == 1 else f"{count} replacements"


def _not_unique(path: str, text: str, old: str, count: int) -> str:
    lines: list[int] = []
    start = text.find(old)
    while start >= 0 and len(lines) < 10:
        lines.append(text.count("\n", 0, start) + 1)
        start = text.find(old, start + 1)
    where = ", ".join(str(n) for n in lines)
    return (
        f"old_string is not unique in {path}: it occurs {count} times (starting at lines {where}). "
        "Add surrounding lines to old_string so it matches exactly one place, or set replace_all "
        "to true to replace every occurrence."
    )


def _fuzzy(path: str, text: str, old: str, new: str, replace_all: bool) -> tuple[str, str]:
    """The text after a tolerant match, and the note saying what matched."""
    # Every mapped character is one code point to one, so positions carry over unchanged.
    normalized = text.translate(PUNCTUATION_TO_ASCII)
    wanted = old.translate(PUNCTUATION_TO_ASCII)
    count = normalized.count(wanted)
    if count == 1 or (count > 1 and replace_all):
        pieces: list[str] = []
        position = 0
        ending = text_dominant_ending(text)
        start = normalized.find(wanted)
        while start >= 0:
            end = start + len(wanted)
            pieces += [text[position:start], replacement_text(text[start:end], old, new, ending)]
            position = end
            start = normalized.find(wanted, position)
        return "".join(pieces) + text[position:], (
            f"Edited {path}: {_replacements(count)} (fuzzy match: old_string matched after reading "
            "curly quotes, dashes and non-breaking spaces as their ASCII forms)."
        )
    if count > 1:
        raise ToolError(_not_unique(path, normalized, wanted, count))
    return _fuzzy_lines(path, text, old, new, replace_all)


def _key(line: str) -> str:
    return " ".join(line.translate(PUNCTUATION_TO_ASCII).split())


def _trim_blank(lines: list[str]) -> list[str]:
    kept = [i for i, line in enumerate(lines) if line.strip()]
    return lines[kept[0] : kept[-1] + 1] if kept else []


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _fuzzy_lines(path: str, text: str, old: str, new: str, replace_all: bool) -> tuple[str, str]:
    bom, body = split_bom(text)  # a BOM is not part of the first line's text
    file_lines = body.split("\n")
    old_lines = _trim_blank(old.split("\n"))
    keys = [_key(line) for line in file_lines]
    wanted = [_key(line) for line in old_lines]
    size = len(wanted)
    matches: list[int] = []
    start = 0
    while size and (found := find_run(keys, wanted, start, len(keys) - size)) is not None:
        matches.append(found)
        start = found + size
    if not matches:
        raise NotFoundError(_not_found(path, file_lines, old_lines))
    if len(matches) > 1 and not replace_all:
        where = ", ".join(str(m + 1) for m in matches[:10])
        raise ToolError(
            f"old_string was not found exactly in {path}, and ignoring whitespace it matches "
            f"{len(matches)} places (lines {where}). Add surrounding lines so it matches one place, "
            "or set replace_all to true."
        )
    new_lines = _trim_blank(new.split("\n")) if new.strip() else []
    ending = text_dominant_ending(text)
    out: list[str] = []
    position = 0
    for start in matches:
        out += file_lines[position:start]
        matched = file_lines[start : start + size]
        reindented = _reindent(new_lines, _indent(old_lines[0]), _indent(matched[0]))
        # Lines as the exact path sees them (endings on, the last one without), so kept
        # lines get the same endings as there; the "\n" after the match stays where it
        # is, and so does the "\r" before it.
        fresh = _ended([line.removesuffix("\r") for line in reindented], ending)
        region = keep_common_lines(_ended(matched), _ended(old_lines), _ended(new_lines), fresh)
        last_cr = "\r" if matched[-1].endswith("\r") else ""
        out += ("".join(region) + last_cr).split("\n") if new_lines else []
        position = start + size
    out += file_lines[position:]
    spans = ", ".join(f"{m + 1}-{m + size}" for m in matches[:10])
    return bom + "\n".join(out), (
        f"Edited {path}: {_replacements(len(matches))} (fuzzy match: old_string matched lines "
        f"{spans} when whitespace and indentation are ignored; new_string was re-indented to match)."
    )


def _ended(lines: list[str], ending: str = "\n") -> list[str]:
    """``lines`` (split at ``\\n``) with ``ending`` back on, the last without one."""
    ended = [line + ending for line in lines]
    if ended:
        ended[-1] = strip_ending(ended[-1])
    return ended


def _reindent(lines: list[str], old_indent: str, file_indent: str) -> list[str]:
    if old_indent == file_indent:
        return lines
    return [file_indent + line[len(old_indent) :] if line.startswith(old_indent) and line.strip() else line for line in lines]


class NotFoundError(ToolError):
    """``old_string`` is nowhere in the file, not even tolerantly."""

    def __init__(self, message: str, elsewhere: bool = False) -> None:
        super().__init__(message)
        self.elsewhere = elsewhere
        """The message names the other file that holds it (so rewriting this one is no advice)."""


ELSEWHERE_CANDIDATES = 5
"""Other files holding ``old_string``'s first line that are checked for the whole of it."""

_REGEX_SPECIAL = frozenset("\\.+*?()|[]{}^$")


async def _found_elsewhere(env: ExecutionEnvironment, path: str, old: str) -> str:
    """A sentence naming the one other workspace file that holds ``old`` exactly, else "".

    Seen with small models: the fix meant for ``stats.py`` sent to ``test_stats.py``, whose
    text they copied from the other file; saying where the text is ends a loop of retries."""
    probe = next((line.strip() for line in old.split("\n") if line.strip()), "")
    if not probe:
        return ""
    pattern = "".join("\\" + c if c in _REGEX_SPECIAL else c for c in probe)
    try:
        listed = await env.grep(pattern, ".", GrepOptions(max_results=ELSEWHERE_CANDIDATES,
                                                            output_mode="files_with_matches"))
    except (WorkspaceError, OSError, ValueError):
        return ""
    holders = []
    for candidate in (line.strip() for line in listed.splitlines()):
        if not candidate or candidate.removeprefix("./") == path.removeprefix("./"):
            continue
        try:
            if old in ops.decode_text(await ops.read_bytes(env, candidate), candidate):
                holders.append(candidate.removeprefix("./"))
        except (WorkspaceError, OSError, ops.OperationError):
            continue
    if len(holders) != 1:
        return ""
    return (f"\nThat exact text is in {holders[0]}: if {holders[0]} is the file to change, "
            f"call edit_file with file_path {holders[0]}.")


def _not_found(path: str, file_lines: list[str], old_lines: list[str]) -> str:
    message = f"old_string was not found in {path} (not even ignoring whitespace and Unicode punctuation)."
    probe = next((_key(line) for line in old_lines if line.strip()), "")
    keys = [_key(line) for line in file_lines]
    best = difflib.get_close_matches(probe, keys, n=1, cutoff=0.5) if probe else []
    if not best:
        return message + " Read the file again and copy the exact text you want to replace."
    center = keys.index(best[0])
    first = max(0, center - WINDOW_CONTEXT)
    last = min(len(file_lines), center + max(len(old_lines), 1) + WINDOW_CONTEXT)
    shown = number_lines(file_lines[first:last], first + 1)
    return (
        f"{message} The closest text is the current text around line {center + 1}:\n{shown}\n"
        "Copy the exact lines you want to change into old_string (without the line-number prefix)."
    )


EDIT_FILE = "edit_file"
"""The tool's name (its one spelling: others import it)."""


def edit_file_tool(description: str | None = None) -> RegisteredTool:
    """``edit_file(file_path, old_string, new_string, replace_all?)``; each tool counts its
    failed edits per session and file (a success resets the file's count)."""
    # Bounded (oldest keys dropped) so a long-lived registry cannot grow without limit.
    failures: OrderedDict[tuple[str | None, str], int] = OrderedDict()

    async def run(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
        key = (ctx.session_id, str(args.get("file_path", "")))
        try:
            result = await edit_file(args, env, ctx)
        except ToolError as exc:
            failures[key] = failures.pop(key, 0) + 1
            if len(failures) > MAX_TRACKED_FILES:
                failures.popitem(last=False)
            elsewhere = isinstance(exc, NotFoundError) and exc.elsewhere
            hint = "" if elsewhere else await _write_file_hint(env, key[1], failures[key])
            if hint:
                raise ToolError(f"{exc}{hint}") from None
            raise
        failures.pop(key, None)
        return result

    return make_tool(
        EDIT_FILE,
        description
        or (
            "Replace an exact string occurrence in a file. old_string must match the file exactly "
            "(including indentation) and be unique unless replace_all is true; include enough "
            "surrounding lines to make it unique. An empty old_string creates a new file."
        ),
        {
            "file_path": {"type": "string", "description": "Path of the file to edit."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The replacement text."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
        },
        ["file_path", "old_string", "new_string"],
        run,
        WRITES_FILE_PATH,
    )
