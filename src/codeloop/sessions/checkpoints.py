"""Checkpoints: the content of each file a turn writes, before and after (issue 9 "rewind").

A *turn* is one model reply and the tool calls it makes; turns are numbered from 1 over the
whole session log (a resumed run continues the count; the pipeline hands it over as the
call's ``step``). :class:`Checkpoints` is the pipeline's CHECKPOINT seam
(``codeloop.tools.pipeline.Checkpoint``): for a call whose tool declares it may write and names
its paths (``write_file``, ``edit_file``, ``apply_patch``: ``codeloop.tools.effects``), the first
time a turn touches a path its prior bytes (or its absence) are stored before the call runs,
and the path's new hash after it. :func:`codeloop.sessions.rewind.rewind` uses both.

A call that may change files nobody can name before it runs (``shell``, an MCP tool, any
``exec`` call with unknown paths) cannot be snapshotted: it leaves an *uncovered* mark in its
turn's manifest, written before it runs, and a rewind across that turn refuses, naming the
call and its command. A shell line whose every command only reads (``ls``, ``cat``, ``git
diff``: :func:`codeloop.policy.approval_modes.is_read_only_line`, the line ``--approval
on-risk`` runs without asking) changes nothing and leaves no mark. A rewind also refuses if a file it would restore changed since.

Layout under ``<state>/sessions/<id>.checkpoints/``: ``blobs/<sha256>`` (content-addressed
file contents) and ``turns/<N>.json`` (``{"files": {path: {"before": sha|null, "after": sha|null}},
"uncovered": [{"tool", "call_id", "command"}]}``), each written atomically.

With a :class:`~codeloop.sessions.snapshots.SnapshotStore` (issue 35: ``codeloop run`` on a
local workspace with git installed) every changing call — shell included — is covered
instead: the whole workspace is snapshotted right before the call and right after it, and the
turn's manifest lists the calls (``"calls": [{"tool", "call_id", "command", "seq", "before":
snapshot, "after": snapshot|null}]``, ``after`` null when the process died during the call).
Each finished call is a ``checkpoint`` event (its turn, call, snapshot and the paths it
changed). The file snapshots and uncovered marks above remain for workspaces without git.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.agent.events import EventKind, SessionEvent
from codeloop.environments.atomic import atomic_write
from codeloop.environments.errors import WorkspaceError
from codeloop.environments.resolver import resolve_workspace_path
from codeloop.environments.safe_open import open_regular, read_bytes_beneath
from codeloop.policy.approval import Effect, ToolCallRequest
from codeloop.sessions.log import LoggedEvent
from codeloop.sessions.snapshots import Snapshot, SnapshotError, SnapshotStore
from codeloop.sessions.state_dir import checkpoints_path
from codeloop.sessions.watch import ChangeWatcher


@dataclass(frozen=True)
class FileChange:
    """What one turn did to one file."""

    path: str
    """Workspace-relative path, ``/``-separated."""
    before: str | None
    """sha256 of the content before the turn; None when the file did not exist."""
    after: str | None
    """sha256 after the turn's last write; None when the file no longer existed."""


@dataclass(frozen=True)
class UncoveredCall:
    """A call that may have changed files no checkpoint saved (a shell command, an MCP tool)."""

    turn: int
    tool: str
    call_id: str | None
    command: str | None
    """The shell line it ran, when its tool says (``shell``)."""

    def describe(self) -> str:
        """``shell `rm a.txt``` or the tool's name, for messages."""
        return f"{self.tool} `{self.command}`" if self.command else f"a {self.tool} call"


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


class Checkpoints:
    """Records file snapshots of one session's turns.

    Give it to the tool pipeline as its CHECKPOINT seam (``Session.checkpoint``): :meth:`before`
    and :meth:`after` get each changing call with its turn as ``step``. Without a step (a caller
    that numbers no turns) the current :attr:`turn` counts, which :meth:`observe` advances when
    fed the session's events. Snapshot failures never fail a tool call: they go to ``on_error``
    (a full disk: the change is made but cannot be rewound).
    """

    def __init__(self, session_id: str, workspace: Path | str, *, turn: int = 0,
                 on_error: Callable[[str], None] = lambda message: None,
                 store: SnapshotStore | None = None,
                 on_checkpoint: Callable[[dict[str, Any]], None] | None = None,
                 watch: bool = True, files_elsewhere: bool = False, marks_only: bool = False) -> None:
        self.session_id = session_id
        self.files_elsewhere = files_elsewhere
        """The session's files are on another machine (SSH): nothing here can snapshot them, so
        every call that may change files is marked uncovered (a rewind across it refuses)."""
        self._marks_only = files_elsewhere or marks_only
        """Snapshot nothing and mark every call that may change files uncovered (``marks_only``:
        a space whose policy turns undo off, for speed)."""
        self.on_error = on_error
        self.workspace = Path(workspace).resolve()
        self.directory = checkpoints_path(session_id)
        self.turn = turn
        """The current turn number (0 before the first reply)."""
        self.store = store
        """Whole-workspace snapshots (None: only codeloop's own file tools are covered)."""
        self.on_checkpoint = on_checkpoint
        """Gets each finished call's ``checkpoint`` event data (None: nobody listens, and the
        paths a call changed are not worked out)."""
        self._kept: set[str] = set()
        self._seq = 0
        self._watch = watch
        self._unit = not watch
        """Made without a watcher for one unit of work that holds the workspace while it runs (a
        spaces run, a relay reply): later snapshots take only what each call declares it touched."""
        self.runs_in_thread = self._unit and not self._marks_only
        """The pipeline calls :meth:`before` and :meth:`after` in a worker thread (their git
        would stall a server's event loop). A unit's ``on_checkpoint`` must then be thread-safe;
        a session's (``record_session``: it announces an event) is called on the loop. A mark
        alone (a small file, not fsynced) costs less than the hop to a thread."""
        self._lock = threading.Lock()
        self.watcher: ChangeWatcher | None = None
        """Tells the store which paths changed since its last snapshot (started with the first)."""

    def close(self) -> None:
        """Stop the file watcher (idempotent)."""
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None

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

    def _load_manifest(self, turn: int) -> dict[str, Any]:
        try:
            manifest = json.loads(self._manifest_path(turn).read_text())
        except FileNotFoundError:
            return {"turn": turn, "files": {}}
        return dict(manifest)

    def _save_manifest(self, turn: int, manifest: dict[str, Any]) -> None:
        path = self._manifest_path(turn)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Not fsynced: a manifest outlives a crash of codeloop (kill -9), not a power loss
        # (two fsyncs per write were a fifth of a spaces run's time).
        # Compact: with ``indent`` json encodes in Python, not in C (a tenth of a spaces run's calls).
        atomic_write(path, json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode(), durable=False)

    def _load(self, turn: int) -> dict[str, dict[str, str | None]]:
        return dict(self._load_manifest(turn)["files"])

    def _save(self, turn: int, files: dict[str, dict[str, str | None]]) -> None:
        self._save_manifest(turn, {**self._load_manifest(turn), "turn": turn, "files": files})

    def _store_blob(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        blob = self.directory / "blobs" / digest
        if not blob.exists():
            blob.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(blob, data)
        return digest

    def before_write(self, paths: Iterable[str], turn: int | None = None) -> None:
        """Snapshot each path's current content, the first time the turn (default: the current
        one) touches it."""
        turn = self.turn if turn is None else turn
        files = self._load(turn)
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
            self._save(turn, files)

    def after_write(self, paths: Iterable[str], turn: int | None = None) -> None:
        """Record each path's hash now (the state a rewind expects to find)."""
        turn = self.turn if turn is None else turn
        files = self._load(turn)
        for raw in paths:
            resolved = self._resolve(raw)
            if resolved is not None and resolved[0] in files:
                files[resolved[0]]["after"] = sha256_of(resolved[1])
        self._save(turn, files)

    def before(self, call: ToolCallRequest, effects: frozenset[Effect], paths: tuple[str, ...] | None,
               step: int | str | None) -> None:
        """The pipeline's CHECKPOINT seam (``Session.checkpoint``), before a call that may change
        the workspace: snapshot the paths it names; a call whose paths nobody knows (``shell``,
        an MCP tool) is marked uncovered instead, before it runs, so a rewind across it refuses."""
        with self._lock:
            self._before(call, paths, self._turn(step))

    def _before(self, call: ToolCallRequest, paths: tuple[str, ...] | None, turn: int) -> None:
        try:
            if paths is None and call.line_only_reads:
                return  # every command of the line only reads (the approval modes' judgement): nothing to undo
            if self._marks_only:
                self._mark_uncovered(turn, call)
            elif self.store is not None:
                self._snapshot_before(turn, call)
            elif paths is None:
                self._mark_uncovered(turn, call)
            else:
                self.before_write(paths, turn)
        except (OSError, SnapshotError) as exc:
            self._failed(exc, call, paths)

    def after(self, call: ToolCallRequest, effects: frozenset[Effect], paths: tuple[str, ...] | None,
              step: int | str | None, outcome: object) -> None:
        """After the call (also a failed one): record the hashes of the paths it named."""
        with self._lock:
            self._after(call, paths, step)

    def _after(self, call: ToolCallRequest, paths: tuple[str, ...] | None, step: int | str | None) -> None:
        if self._marks_only:
            return
        if self.store is not None:
            if paths is None and call.line_only_reads:
                return
            try:
                self._snapshot_after(self._turn(step), call)
            except (OSError, SnapshotError) as exc:
                self._failed(exc, call, paths)
            return
        if paths is None:
            return
        try:
            self.after_write(paths, self._turn(step))
        except OSError as exc:
            self._failed(exc, call, paths)

    def _turn(self, step: int | str | None) -> int:
        return step if isinstance(step, int) else self.turn

    def _mark_uncovered(self, turn: int, call: ToolCallRequest) -> None:
        manifest = self._load_manifest(turn)
        manifest.setdefault("uncovered", []).append(
            {"tool": call.name, "call_id": call.call_id, "command": call.command})
        self._save_manifest(turn, manifest)

    def uncovered(self, turn: int) -> list[UncoveredCall]:
        """The calls of ``turn`` no checkpoint covers (in the order they ran)."""
        return [UncoveredCall(turn, str(u.get("tool")), u.get("call_id"), u.get("command"))
                for u in self._load_manifest(turn).get("uncovered", [])]

    def _failed(self, exc: OSError | SnapshotError, call: ToolCallRequest, paths: tuple[str, ...] | None) -> None:
        # atomic_write left no partial file; what is lost is the ability to rewind this change.
        what = call.name if paths is None else ", ".join(paths)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        self.on_error(f"{reason} writing the checkpoint of {what} in {self.directory}; "
                      "`codeloop rewind` cannot undo this change")

    def _take(self, name: str, declared: set[str] | None = None) -> dict[str, Any]:
        """Snapshot the workspace now. Without a watcher, ``declared`` is what the caller knows
        changed since this instance's last snapshot (absolute paths; None: unknown, scan it all)."""
        assert self.store is not None
        if not self._kept:  # the first snapshot: what it leaves out goes with the session
            from codeloop.sessions.rewind import save_settings

            save_settings(self.session_id, self.store)
        if self._watch and self.watcher is None:
            try:
                self.watcher = ChangeWatcher(self.store.workspace, self.store.repository / "watch")
                self.watcher.take()  # from here on every change is seen: the full scan below is the base
            except Exception:  # no watcher (no inotify watch left, ...): every snapshot scans everything
                self._watch = False
        changed = self.watcher.take() if self.watcher is not None else declared if self._unit else None
        snap = self.store.snapshot(changed)
        if snap.tree not in self._kept:  # one ref per distinct tree keeps it from pruning
            self.store.keep(snap.tree, f"{self.session_id}/{name}")
            self._kept.add(snap.tree)
        # Wall-clock order, across the processes of a resumed session: a rewind compares the
        # snapshot after one call with the one before the next only when taken in that order.
        self._seq = max(self._seq + 1, time.time_ns())
        return {**snap.to_json(), "seq": self._seq}

    def _declared(self, paths: tuple[str, ...] | None) -> set[str] | None:
        """The absolute paths a call with these declared ``paths`` may have changed: each as
        given and as resolved (a write through a linked directory changes the link's target);
        None when the call's tool cannot say (``shell``)."""
        if paths is None:
            return None
        out: set[str] = set()
        for raw in paths:
            given = os.path.normpath(os.path.join(self.workspace, raw))
            if os.path.realpath(os.path.dirname(given)) == os.path.dirname(given):
                out.add(given)  # (through a linked directory git would refuse it: the target is taken)
            resolved = self._resolve(raw)
            if resolved is not None:
                out.add(str(resolved[1]))
        return out

    def _snapshot_before(self, turn: int, call: ToolCallRequest) -> None:
        # Without a watcher (a spaces run, a relay reply: one instance per unit of work, which
        # holds the workspace meanwhile) nothing changed since this instance's last snapshot,
        # the previous call's after; the instance's first snapshot scans the whole tree.
        snap = self._take(f"{turn}-before", set())
        manifest = self._load_manifest(turn)
        manifest.setdefault("calls", []).append(
            {"tool": call.name, "call_id": call.call_id, "command": call.command, "before": snap, "after": None})
        self._save_manifest(turn, manifest)

    def _snapshot_after(self, turn: int, call: ToolCallRequest) -> None:
        assert self.store is not None
        manifest = self._load_manifest(turn)
        entry = next((c for c in reversed(manifest.get("calls", []))
                      if c.get("call_id") == call.call_id and c.get("after") is None), None)
        if entry is None:  # its before failed: nothing to pair this snapshot with
            return
        entry["after"] = snap = self._take(f"{turn}-after", self._declared(call.paths))
        self._save_manifest(turn, manifest)
        if self.on_checkpoint is None:
            return  # the diff below is a git process per call; nobody would read it
        changed = [c.path for c in self.store.diff(Snapshot.from_json(entry["before"]), Snapshot.from_json(snap))]
        self.on_checkpoint({"step": turn, "call_id": call.call_id, "tool_name": call.name,
                            "snapshot": snap["tree"], "paths": changed})

    def calls(self, turn: int) -> list[dict[str, Any]]:
        """The snapshotted calls of ``turn`` in the order they started (issue 35)."""
        return list(self._load_manifest(turn).get("calls", []))

    def load_manifest(self, turn: int) -> dict[str, Any] | None:
        """The raw manifest of ``turn`` (None: none), for a rewind to keep for redo."""
        path = self._manifest_path(turn)
        return dict(json.loads(path.read_text())) if path.is_file() else None

    def restore_manifest(self, turn: int, manifest: dict[str, Any]) -> None:
        """Put back a manifest :meth:`load_manifest` returned (redo)."""
        self._save_manifest(turn, manifest)

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
