"""Checkpoints: the content of each file a turn writes, before and after (issue 9 "rewind").

A *turn* is one model reply and the tool calls it makes; turns are numbered from 1 over the
whole session log (a resumed run continues the count). Before a file-writing tool
(``write_file``, ``edit_file``, ``apply_patch``) runs, the first time a turn touches a path
its prior bytes (or its absence) are stored; after the tool runs, the path's new hash is
recorded. :func:`codeloop.sessions.rewind.rewind` uses both.

Layout under ``<state>/sessions/<id>.checkpoints/``: ``blobs/<sha256>`` (content-addressed
file contents) and ``turns/<N>.json`` (``{"files": {path: {"before": sha|null, "after": sha|null}}}``),
each written atomically.

Not covered: files changed by ``shell`` commands (a command's effects cannot be known before
it runs); rewind restores only what the file tools wrote, and refuses if a shell command
later changed one of those files.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.agent.events import EventKind, SessionEvent
from codeloop.environments.atomic import atomic_write
from codeloop.environments.errors import WorkspaceError
from codeloop.environments.resolver import resolve_workspace_path
from codeloop.environments.safe_open import open_regular, read_bytes_beneath
from codeloop.policy.approval import ToolCallRequest
from codeloop.sessions.log import LoggedEvent
from codeloop.sessions.state_dir import checkpoints_path
from codeloop.tools.errors import PatchError
from codeloop.tools.patch_parser import AddFile, DeleteFile, UpdateFile, parse_patch

WRITING_TOOLS = ("write_file", "edit_file", "apply_patch")
"""Tools whose target paths are snapshotted (arguments name every file they change)."""


@dataclass(frozen=True)
class FileChange:
    """What one turn did to one file."""

    path: str
    """Workspace-relative path, ``/``-separated."""
    before: str | None
    """sha256 of the content before the turn; None when the file did not exist."""
    after: str | None
    """sha256 after the turn's last write; None when the file no longer existed."""


def sha256_of(path: Path) -> str | None:
    """Hash of the file at ``path``, None when there is no regular file there (a FIFO is
    not waited on; a big file is hashed in chunks, never held in memory)."""
    try:
        fd = open_regular(str(path), str(path), allow_hardlinks=True)
    except (OSError, WorkspaceError):
        return None
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def count_turns(events: Iterable[LoggedEvent]) -> int:
    """How many turns (``assistant_text_end`` events) a log holds."""
    return sum(1 for e in events if e.kind == EventKind.ASSISTANT_TEXT_END.value)


def target_paths(tool_name: str, arguments: dict[str, Any]) -> list[str]:
    """The paths a writing tool call names (may be outside the workspace: callers resolve)."""
    if tool_name in ("write_file", "edit_file"):
        path = arguments.get("file_path")
        return [path] if isinstance(path, str) else []
    if tool_name == "apply_patch" and isinstance(arguments.get("patch"), str):
        try:
            hunks = parse_patch(arguments["patch"]).hunks
        except PatchError:
            return []
        paths: list[str] = []
        for h in hunks:
            if isinstance(h, AddFile | DeleteFile):
                paths.append(h.path)
            elif isinstance(h, UpdateFile):
                paths += [h.path] + ([h.move_path] if h.move_path else [])
        return paths
    return []


class Checkpoints:
    """Records file snapshots of one session's turns.

    Feed it every session event (``session.subscribe(checkpoints.observe)``) so it knows the
    current turn, and give :meth:`around` to the tool pipeline (``Session.checkpoint``) so
    file tools snapshot their targets. Snapshot failures never fail a tool call: they go to
    ``on_error`` (a full disk: the change is made but cannot be rewound).
    """

    def __init__(self, session_id: str, workspace: Path | str, *, turn: int = 0,
                 on_error: Callable[[str], None] = lambda message: None) -> None:
        self.session_id = session_id
        self.on_error = on_error
        self.workspace = Path(workspace).resolve()
        self.directory = checkpoints_path(session_id)
        self.turn = turn
        """The current turn number (0 before the first reply)."""

    def observe(self, event: SessionEvent) -> None:
        """Advance the turn on each ``assistant_text_end`` (tool calls follow their reply)."""
        if event.kind == EventKind.ASSISTANT_TEXT_END:
            self.turn += 1

    def _resolve(self, path: str) -> tuple[str, Path] | None:
        try:
            real = resolve_workspace_path(self.workspace, path)
        except (WorkspaceError, OSError, ValueError):
            return None
        return real.relative_to(self.workspace).as_posix(), real

    def _manifest_path(self, turn: int) -> Path:
        return self.directory / "turns" / f"{turn}.json"

    def _load(self, turn: int) -> dict[str, dict[str, str | None]]:
        try:
            files = json.loads(self._manifest_path(turn).read_text())["files"]
        except FileNotFoundError:
            return {}
        return dict(files)

    def _save(self, turn: int, files: dict[str, dict[str, str | None]]) -> None:
        path = self._manifest_path(turn)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"turn": turn, "files": files}, indent=1, sort_keys=True).encode())

    def _store_blob(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        blob = self.directory / "blobs" / digest
        if not blob.exists():
            blob.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(blob, data)
        return digest

    def before_write(self, paths: Iterable[str]) -> None:
        """Snapshot each path's current content, the first time this turn touches it."""
        files = self._load(self.turn)
        known = len(files)
        for raw in paths:
            resolved = self._resolve(raw)
            if resolved is None or resolved[0] in files:
                continue
            rel, real = resolved
            if real.is_dir():
                before: str | None = None
            else:
                try:  # bounded and never blocking: a file over the read bound refuses the write
                    before = self._store_blob(read_bytes_beneath(self.workspace, real, rel, allow_hardlinks=True))
                except (FileNotFoundError, NotADirectoryError):
                    before = None
            files[rel] = {"before": before, "after": before}
        if len(files) > known:
            self._save(self.turn, files)

    def after_write(self, paths: Iterable[str]) -> None:
        """Record each path's hash now (the state a rewind expects to find)."""
        files = self._load(self.turn)
        for raw in paths:
            resolved = self._resolve(raw)
            if resolved is not None and resolved[0] in files:
                files[resolved[0]]["after"] = sha256_of(resolved[1])
        self._save(self.turn, files)

    @contextmanager
    def around(self, call: ToolCallRequest) -> Iterator[None]:
        """The pipeline's CHECKPOINT step (``Session.checkpoint``): snapshot the paths a writing
        tool names before it runs and record their hashes after it ran; other tools pass by."""
        if call.name not in WRITING_TOOLS:
            yield
            return
        paths = target_paths(call.name, call.arguments)
        try:
            self.before_write(paths)
        except OSError as exc:
            self._failed(exc, paths)
        try:
            yield
        finally:
            try:
                self.after_write(paths)
            except OSError as exc:
                self._failed(exc, paths)

    def _failed(self, exc: OSError, paths: list[str]) -> None:
        # atomic_write left no partial file; what is lost is the ability to rewind this change.
        self.on_error(f"{exc.strerror or exc} writing the checkpoint of {', '.join(paths)} in {self.directory}; "
                      "`codeloop rewind` cannot undo this change")

    def turns(self) -> list[int]:
        """Turn numbers that have a checkpoint, ascending."""
        folder = self.directory / "turns"
        if not folder.is_dir():
            return []
        return sorted(int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit())

    def changes(self, turn: int) -> list[FileChange]:
        """What ``turn`` did to each file it wrote."""
        return [FileChange(path, f.get("before"), f.get("after")) for path, f in sorted(self._load(turn).items())]

    def blob(self, digest: str) -> bytes:
        """The stored content with this hash."""
        return (self.directory / "blobs" / digest).read_bytes()

    def drop_after(self, turn: int) -> None:
        """Forget the checkpoints of turns after ``turn`` (blobs stay; they are small and shared)."""
        for t in self.turns():
            if t > turn:
                self._manifest_path(t).unlink(missing_ok=True)
