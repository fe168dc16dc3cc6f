"""File tools: read_file, read_many_files, write_file, list_dir (loop spec §3.3, §3.6).

All file access goes through the ``ExecutionEnvironment`` (never ``open()``), so the
tools work the same in local, sandboxed and SSH workspaces, and every path is judged
by the environment's resolver.
"""

from __future__ import annotations

import posixpath
from collections import OrderedDict
from typing import Any

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import BinaryFileError, WorkspaceError
from codeloop.llm.types import ImageData
from codeloop.tools import workspace_ops as ops
from codeloop.tools.effects import WRITES_FILE_PATH, reads
from codeloop.tools.errors import ToolError
from codeloop.tools.registry import RegisteredTool, ToolContext, ToolOutput, make_tool

DEFAULT_READ_LIMIT = 2000
"""Lines read_file returns when no ``limit`` is given (spec §3.3)."""
MAX_IMAGE_BYTES = 10_000_000
"""Largest image read_file returns (bigger ones are refused before reading)."""
MAX_MANY_FILES = 100
"""Files read_many_files reads at most in one call."""

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
_GLOB_CHARS = set("*?[")


def number_lines(lines: list[str], first: int) -> str:
    """``NNN | content`` lines, numbers right-aligned to the widest shown (at least 3)."""
    width = max(3, len(str(first + len(lines) - 1)))
    return "\n".join(f"{n:>{width}} | {line}" for n, line in enumerate(lines, start=first))


def _split(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _image_type(path: str) -> str | None:
    dot = path.rfind(".")
    return IMAGE_TYPES.get(path[dot:].lower()) if dot >= 0 else None


class SeenFiles:
    """Files each session has read or written, and the version it saw (the fingerprint of
    the file's bytes then), for two refusals: write_file does not replace a file the model
    has never looked at (a small model "sets a key" in a JSON file by writing a new file
    holding only that key), and no edit (write_file, edit_file, apply_patch) goes over a
    file that changed on disk since the session last read or wrote it (a command, a
    formatter or the user changed it: the edit would be computed from text the model has
    not seen). Bounded per process; sessions without an id (one-shot ``codeloop tool``
    calls, codali's builder) are not tracked."""

    def __init__(self, limit: int = 4096) -> None:
        self._seen: OrderedDict[tuple[str, str], str | None] = OrderedDict()
        """The fingerprint last seen; None: seen, version unknown (a resumed session's files)."""
        self._limit = limit

    @staticmethod
    def _key(session_id: str, root: str, path: str) -> tuple[str, str]:
        root = root.rstrip("/")
        if path.startswith(root + "/"):
            path = path[len(root) + 1:]
        return session_id, posixpath.normpath(path)

    def saw(self, ctx: ToolContext, env: ExecutionEnvironment, path: str, sha256: str | None) -> None:
        """Record that the call's session read or wrote ``path`` holding bytes of ``sha256``."""
        if ctx.session_id is not None:
            self.saw_path(ctx.session_id, env.working_directory(), path, sha256)

    def saw_path(self, session_id: str, root: str, path: str, sha256: str | None = None) -> None:
        """Record that ``session_id`` (working in ``root``) has read or written ``path``."""
        key = self._key(session_id, root, path)
        self._seen.pop(key, None)
        self._seen[key] = sha256
        while len(self._seen) > self._limit:
            self._seen.popitem(last=False)

    def forget(self, ctx: ToolContext, env: ExecutionEnvironment, path: str) -> None:
        """``path`` was deleted by the session: a file created there later is a new file."""
        if ctx.session_id is not None:
            self._seen.pop(self._key(ctx.session_id, env.working_directory(), path), None)

    def seen(self, ctx: ToolContext, env: ExecutionEnvironment, path: str) -> bool:
        return ctx.session_id is None or self._key(ctx.session_id, env.working_directory(), path) in self._seen

    def check_unchanged(self, ctx: ToolContext, env: ExecutionEnvironment, path: str, data: bytes) -> None:
        """Raise :class:`ToolError` when ``path``, which holds ``data`` now, is not the
        version the session last read or wrote. A file the session has not seen passes
        (edit_file and apply_patch match their text against the file itself)."""
        if ctx.session_id is None:
            return
        known = self._seen.get(self._key(ctx.session_id, env.working_directory(), path))
        if known is not None and known != ops.fingerprint(data):
            raise ToolError(stale_file_message(path))


def stale_file_message(path: str) -> str:
    """The refusal of an edit over changes the model has not seen."""
    return (
        f"{path} has changed on disk since you last read or wrote it in this session (a command, "
        f"another program or the user changed it); the change was refused. Call read_file on {path} "
        "again and make your change on its current content.")


SEEN_FILES = SeenFiles()
"""Shared by read_file, read_many_files, write_file, edit_file and apply_patch of every registry."""

MAX_FINGERPRINT_BYTES = 64_000_000
"""Files up to this size are fingerprinted when read; a bigger one is seen without a version."""


async def _version(env: ExecutionEnvironment, ctx: ToolContext, path: str) -> str | None:
    """The fingerprint of ``path`` as it is now, for a session that tracks what it read."""
    if ctx.session_id is None:
        return None
    try:
        return ops.fingerprint(await ops.read_bytes(env, path, max_bytes=MAX_FINGERPRINT_BYTES))
    except WorkspaceError:
        return None


async def read_file(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
    """Line-numbered text; images as image data; binary files refused (spec §3.3)."""
    path: str = args["file_path"]
    # Taken before the read: if the file changes in between, a later edit is refused, never
    # computed from text the model did not see.
    version = await _version(env, ctx, path)
    output = await _read_file(path, args, env, ctx.lenient)
    SEEN_FILES.saw(ctx, env, path, version)
    return output


PAST_END_LINES = 20
"""Lines shown from a file's end when a small model's read_file offset is past it."""


async def _past_end(path: str, offset: int, env: ExecutionEnvironment) -> ToolOutput:
    """A lenient read past the end: the file's length and its last lines, not "nothing"."""
    lines = _split(await env.read_file(path))
    if not lines:
        return ToolOutput(f"{path} is empty.")
    tail = lines[-PAST_END_LINES:]
    shown = "its content" if len(tail) == len(lines) else f"its last {len(tail)} lines"
    return ToolOutput(f"{path} has {len(lines)} lines, so offset {offset} is past its end; {shown}:\n"
                      + number_lines(tail, len(lines) - len(tail) + 1))


async def _read_file(path: str, args: dict[str, Any], env: ExecutionEnvironment, lenient: bool = False) -> ToolOutput:
    offset: int = args.get("offset") or 1
    limit: int = args.get("limit") or DEFAULT_READ_LIMIT
    media_type = _image_type(path)
    if media_type is not None:
        try:
            data = await ops.read_bytes(env, path, max_bytes=MAX_IMAGE_BYTES)
        except ops.OperationError as exc:
            if exc.kind != "too_large":
                raise
            raise ToolError(f"{path} is an image of {exc.size} bytes, over the {MAX_IMAGE_BYTES}-byte limit.") from None
        return ToolOutput(
            f"Image file {path} ({media_type}, {len(data)} bytes) is attached.",
            images=(ImageData(data=data, media_type=media_type),),
        )
    try:
        text = await env.read_file(path, offset=offset, limit=limit + 1)
    except BinaryFileError as exc:
        raise ToolError(f"{exc}. read_file shows text only; inspect it with shell (`file`, `xxd | head`).") from None
    lines = _split(text)
    if not lines:
        if offset > 1 and lenient:
            return await _past_end(path, offset, env)
        if offset > 1:
            return ToolOutput(f"{path} has fewer than {offset} lines; nothing to show at offset {offset}.")
        return ToolOutput(f"{path} is empty.")
    more = len(lines) > limit
    body = number_lines(lines[:limit], offset)
    if more:
        body += (
            f"\n[... more lines follow; call read_file with offset={offset + limit} to continue ...]"
        )
    return ToolOutput(body)


async def read_many_files(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
    """Several files (paths or glob patterns) in one result, each under a ``--- path ---`` header."""
    paths: list[str] = []
    for item in args["paths"]:
        expanded = await env.glob(item) if _GLOB_CHARS & set(item) else [item]
        paths.extend(p for p in expanded if p not in paths)
    if not paths:
        raise ToolError("read_many_files: no files matched " + ", ".join(args["paths"]))
    sections: list[str] = []
    skipped = paths[MAX_MANY_FILES:]
    for path in paths[:MAX_MANY_FILES]:
        try:
            version = await _version(env, ctx, path)
            sections.append(f"--- {path} ---\n{await env.read_file(path)}")
            SEEN_FILES.saw(ctx, env, path, version)
        except WorkspaceError as exc:
            sections.append(f"--- {path} ---\n[skipped: {exc}]")
    if skipped:
        sections.append(f"[{len(skipped)} more files not read; ask for at most {MAX_MANY_FILES} at once]")
    return ToolOutput("\n\n".join(sections))


async def write_file(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
    """Atomically create or replace a file, parents included; report bytes written. In a
    session, an existing file must have been read (or written) by it first, as Claude Code
    requires: replacing a file unseen loses what the model did not know was there; and it
    must not have changed since (:class:`SeenFiles`). A replaced UTF-8 file keeps its CRLF
    endings and BOM (``workspace_ops.create_file``)."""
    path: str = args["file_path"]
    if ctx.session_id is not None and await env.file_exists(path):
        if not SEEN_FILES.seen(ctx, env, path):
            size = (await env.stat(path)).size
            raise ToolError(
                f"{path} already exists ({size} bytes) and you have not read it in this session. write_file "
                f"replaces the whole file: call read_file on {path} first, then write its complete new content "
                "keeping what should stay (or change just a part with edit_file).")
        if not (await env.stat(path)).is_dir:
            SEEN_FILES.check_unchanged(ctx, env, path, await ops.read_bytes(env, path))
    written = await ops.create_file(env, path, args["content"], before_change=ctx.before_change)
    SEEN_FILES.saw(ctx, env, path, written.sha256)
    return f"Wrote {written.bytes_written} bytes to {path}"


async def list_dir(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
    """Entries down to ``depth`` levels: directories end with ``/``, files show their size."""
    path: str = args.get("path") or "."
    entries = await env.list_directory(path, depth=args.get("depth") or 1)
    if not entries:
        return f"{path} is empty."
    return "\n".join(f"{e.name}/" if e.is_dir else f"{e.name} ({e.size} bytes)" for e in entries)


READ_FILE = "read_file"
READ_MANY_FILES = "read_many_files"
WRITE_FILE = "write_file"
LIST_DIR = "list_dir"
"""The tool names (their one spelling: others import them)."""


def read_file_tool(description: str | None = None) -> RegisteredTool:
    """``read_file(file_path, offset?, limit?)``."""
    return make_tool(
        READ_FILE,
        description
        or (
            "Read a file from the filesystem. Returns line-numbered content (`NNN | line`). "
            f"Reads up to {DEFAULT_READ_LIMIT} lines by default; use offset and limit for long "
            "files. Images (png, jpg, gif, webp) are returned as images."
        ),
        {
            "file_path": {"type": "string", "description": "Path of the file (relative to the workspace root, or absolute inside it)."},
            "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start reading from."},
            "limit": {"type": "integer", "minimum": 1, "description": f"Maximum number of lines to read (default {DEFAULT_READ_LIMIT})."},
        },
        ["file_path"],
        read_file,
        reads("file_path"),
    )


def read_many_files_tool(description: str | None = None) -> RegisteredTool:
    """``read_many_files(paths)``: files or glob patterns."""
    return make_tool(
        READ_MANY_FILES,
        description
        or "Read several files at once. `paths` holds file paths or glob patterns (`src/**/*.py`); "
        "each file's content follows a `--- path ---` header.",
        {"paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "File paths or glob patterns."}},
        ["paths"],
        read_many_files,
        reads("paths"),
    )


def write_file_tool(description: str | None = None) -> RegisteredTool:
    """``write_file(file_path, content)``."""
    return make_tool(
        WRITE_FILE,
        description or "Write content to a file. Creates the file and parent directories if needed; "
        "replaces an existing file completely.",
        {
            "file_path": {"type": "string", "description": "Path of the file to write."},
            "content": {"type": "string", "description": "The full file content."},
        },
        ["file_path", "content"],
        write_file,
        WRITES_FILE_PATH,
    )


def list_dir_tool(description: str | None = None) -> RegisteredTool:
    """``list_dir(path?, depth?)``."""
    return make_tool(
        LIST_DIR,
        description or "List a directory's entries. Directories end with `/`; `depth` > 1 also lists "
        "their contents.",
        {
            "path": {"type": "string", "description": "Directory to list (default: the workspace root)."},
            "depth": {"type": "integer", "minimum": 1, "maximum": 10, "description": "Levels to descend (default 1)."},
        },
        [],
        list_dir,
        reads("path"),
    )
