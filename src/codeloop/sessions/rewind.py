"""Rewind: put the workspace files and the conversation back to the end of a turn (issue 9);
undo and redo (issue 35).

A session recorded with whole-workspace snapshots (``Checkpoints.store``, issue 35) rewinds by
:func:`_rewind_snapshots`: the workspace is snapshotted now, compared with what the session
left (the snapshot after its last call) and with what was there between its calls; paths
changed outside the session refuse the rewind, naming them, unless ``force``. Then the
change list from now to the snapshot before the first later call is applied
(``SnapshotStore.restore``). The rewind is itself kept for :func:`redo`: the snapshot of the
workspace before it, the log bytes cut and the manifests dropped (``redo/<n>.json``).
A session recorded before issue 35 (file snapshots and uncovered marks) rewinds as below.

All-or-nothing on the checks: no later turn may hold a call no checkpoint covers (a shell
command, an MCP tool: what it changed cannot be put back), and every file a later turn wrote
must still hold exactly what the session left there (its recorded hash); otherwise
:class:`RewindRefusedError` names the call or the file and nothing is written. Then files are restored byte-exact (atomic writes; files the
session created are deleted), the log is cut after turn N (atomic rewrite), and later
checkpoints are dropped. Directories the session created are left in place, empty.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from codeloop.environments.atomic import atomic_write
from codeloop.environments.errors import WorkspaceError
from codeloop.environments.resolver import resolve_workspace_path
from codeloop.environments.safe_open import atomic_write_beneath, parent_fd
from codeloop.sessions.checkpoints import Checkpoints, count_turns, sha256_of
from codeloop.sessions.log import LoggedEvent, load_events
from codeloop.sessions.snapshots import Change, Skipped, Snapshot, SnapshotError, SnapshotStore, git_available
from codeloop.sessions.state_dir import checkpoints_path, existing_log_path

_NEXT_TURN_KINDS = frozenset({"assistant_text_start", "assistant_text_end", "user_input",
                              "steering_injected", "loop_detection"})
"""Events that belong to what comes after a turn, not to the turn itself."""


class RewindRefusedError(Exception):
    """The rewind cannot be done safely; nothing was changed. The message says why and what to do."""


@dataclass(frozen=True)
class RewindResult:
    """What a rewind did."""

    turn: int
    """The turn the session now ends with."""
    restored: tuple[str, ...]
    """Workspace-relative paths written back with their earlier content."""
    deleted: tuple[str, ...]
    """Paths removed because they did not exist at that point."""
    events_dropped: int
    """Log events removed (the conversation after the turn)."""
    changes: tuple[Change, ...] = ()
    """Every path changed, in order (snapshot sessions; ``restored``/``deleted`` summarize it)."""
    not_covered: tuple[Skipped, ...] = ()
    """What the snapshots leave out: excluded directories, large files, nested repositories."""
    outside: tuple[str, ...] = ()
    """Paths changed outside the session that ``force`` overrode."""
    dry_run: bool = False
    """Nothing was changed: this is what the rewind would do."""

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, "restored": list(self.restored), "deleted": list(self.deleted),
                "events_dropped": self.events_dropped, "dry_run": self.dry_run,
                "changes": [{"path": c.path, "action": c.action, "mode": c.mode} for c in self.changes],
                "not_covered": [{"path": s.path, "reason": s.reason} for s in self.not_covered],
                "outside": list(self.outside)}


def cut_offset(events: list[LoggedEvent], to_turn: int) -> int:
    """Byte offset in the log where the events after turn ``to_turn`` begin."""
    seen = 0
    for i, e in enumerate(events):
        if seen == to_turn and e.kind in _NEXT_TURN_KINDS:
            return events[i - 1].end_offset if i else 0
        if e.kind == "assistant_text_end":
            seen += 1
    return events[-1].end_offset if events else 0


def _workspace(session_id: str, events: list[LoggedEvent], workspace: Path | str | None) -> Path:
    if workspace is None:
        start = next((e for e in events if e.kind == "session_start"), None)
        if start is None or not start.data.get("working_directory"):
            raise RewindRefusedError(f"session {session_id} records no workspace; pass --workspace DIR")
        workspace = str(start.data["working_directory"])
    return Path(workspace).resolve()


def _settings_path(session_id: str) -> Path:
    return checkpoints_path(session_id) / "snapshot-settings.json"


UNIT_INDEX = "index-units"
"""The index the runs of a workspace that hold it one at a time (spaces runs, relay replies,
under their space's or root's lock) share: one file, where an index per run would pile up one
per run in codeloop's repository (and each new one is copied from the newest)."""


def store_for(session_id: str, root: Path, *, exclude_dirs: tuple[str, ...] | None = None,
              max_file_bytes: int | None = None, index: str | None = None) -> SnapshotStore:
    """The snapshot store a session of ``root`` records into (its own index). Left out, the
    exclusions the session recorded with apply (:func:`save_settings`): a rewind must leave
    out exactly what the recording left out, or it would remove files the snapshots never held."""
    if exclude_dirs is None and max_file_bytes is None:
        try:
            data = json.loads(_settings_path(session_id).read_text())
            exclude_dirs, max_file_bytes = tuple(data["exclude_dirs"]), int(data["max_file_bytes"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    store = SnapshotStore(root, index=index or f"index-{session_id}")
    if exclude_dirs is not None:
        store.exclude_dirs = exclude_dirs
    if max_file_bytes is not None:
        store.max_file_bytes = max_file_bytes
    return store


def save_settings(session_id: str, store: SnapshotStore) -> None:
    """Keep the exclusions of ``store`` with the session's checkpoints (OSError: not written)."""
    path = _settings_path(session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"exclude_dirs": list(store.exclude_dirs),
                                   "max_file_bytes": store.max_file_bytes}).encode(), durable=False)


def rewind(session_id: str, to_turn: int, workspace: Path | str | None = None, *,
           dry_run: bool = False, force: bool = False) -> RewindResult:
    """Restore files and conversation to the end of turn ``to_turn`` (0: before the first reply).

    ``workspace`` defaults to the session's working directory. ``dry_run``: only say what
    would change; ``force``: overwrite changes made outside the session too. Raises
    RewindRefusedError (nothing changed) and SessionNotFoundError.
    """
    existing_log_path(session_id)
    events = load_events(session_id)
    total = count_turns(events)
    if to_turn < 0 or to_turn > total:
        raise RewindRefusedError(f"--to {to_turn} is out of range: session {session_id} has turns 0..{total}")
    root = _workspace(session_id, events, workspace)
    checkpoints = Checkpoints(session_id, root)
    later = [t for t in checkpoints.turns() if t > to_turn]
    snapshotted = [t for t in later if checkpoints.calls(t)]
    legacy = [t for t in later if checkpoints.changes(t) or checkpoints.uncovered(t)]
    if snapshotted and legacy:
        raise RewindRefusedError(
            f"cannot rewind {session_id} to turn {to_turn}: turns {legacy[0]}..{legacy[-1]} were recorded "
            f"before whole-workspace snapshots existed; rewind to turn {legacy[-1]} or later")
    if snapshotted or not legacy:
        return _rewind_snapshots(session_id, to_turn, root, events, checkpoints, dry_run=dry_run, force=force)
    if dry_run:
        raise RewindRefusedError(f"session {session_id} was recorded before snapshots; --dry-run needs them")
    return _rewind_files(session_id, to_turn, root, events, checkpoints)


def _rewind_files(session_id: str, to_turn: int, root: Path, events: list[LoggedEvent],
                  checkpoints: Checkpoints) -> RewindResult:
    """The rewind of sessions recorded before issue 35 (codeloop's own file tools only)."""
    log = existing_log_path(session_id)

    uncovered = [u for turn in checkpoints.turns() if turn > to_turn for u in checkpoints.uncovered(turn)]
    if uncovered:
        calls = "; ".join(f"turn {u.turn} ran {u.describe()}" for u in uncovered)
        raise RewindRefusedError(
            f"cannot rewind {session_id} to turn {to_turn}: {calls}, which no checkpoint covers (its changes "
            f"to files cannot be undone); nothing was restored. Rewind to turn {uncovered[-1].turn} or later, "
            "or undo that command's changes yourself (git can show them)")

    expected: dict[str, tuple[str | None, int]] = {}
    original: dict[str, str | None] = {}
    for turn in checkpoints.turns():
        if turn <= to_turn:
            continue
        for change in checkpoints.changes(turn):
            expected[change.path] = (change.after, turn)
            original.setdefault(change.path, change.before)

    targets: dict[str, Path] = {}
    for path, (after, turn) in sorted(expected.items()):
        try:
            real = resolve_workspace_path(root, path)
        except (WorkspaceError, OSError) as exc:
            raise RewindRefusedError(f"cannot restore {path}: {exc}") from None
        if sha256_of(real) != after:
            raise RewindRefusedError(
                f"{path} changed outside the session since turn {turn} wrote it; nothing was restored. "
                "Save or revert your change to it, then rewind again")
        targets[path] = real
    contents: dict[str, bytes | None] = {}
    for path, before in original.items():
        try:
            contents[path] = None if before is None else checkpoints.blob(before)
        except OSError:
            raise RewindRefusedError(f"the checkpoint of {path} is missing from {checkpoints.directory}; "
                                     "cannot restore it") from None

    restored, deleted = [], []
    for path, data in sorted(contents.items()):
        real = targets[path]
        # Written and deleted through directory descriptors beneath the workspace: a link
        # swapped in since the check above cannot redirect them outside it.
        if data is None:
            try:
                with parent_fd(root, real, path) as (dir_fd, name):
                    os.unlink(name, dir_fd=dir_fd)
                deleted.append(path)
            except FileNotFoundError:
                pass
        else:
            atomic_write_beneath(root, real, data, path)
            restored.append(path)

    cut = cut_offset(events, to_turn)
    kept = sum(1 for e in events if e.end_offset <= cut)
    atomic_write(log, log.read_bytes()[:cut])
    checkpoints.drop_after(to_turn)
    return RewindResult(to_turn, tuple(restored), tuple(deleted), len(events) - kept)


def _snap(data: dict[str, Any] | None) -> Snapshot | None:
    return None if data is None else Snapshot.from_json(data)


def _outside_changes(store: SnapshotStore, calls: list[dict[str, Any]], now: Snapshot) -> list[str]:
    """Paths changed by someone else than the session: between two of its calls, or since
    its last one. A call that never finished (the process died in it) owns what changed."""
    found: set[str] = set()
    for earlier, later in itertools.pairwise(calls):
        after, before = earlier.get("after"), later["before"]
        if after is not None and int(after.get("seq", 0)) < int(before.get("seq", 0)):
            found.update(c.path for c in store.diff(Snapshot.from_json(after), Snapshot.from_json(before)))
    last = _snap(calls[-1].get("after"))
    if last is not None:
        found.update(c.path for c in store.diff(last, now))
    return sorted(found)


def _result(to_turn: int, changes: list[Change], now: Snapshot, dropped: int, outside: list[str],
            dry_run: bool) -> RewindResult:
    return RewindResult(to_turn, tuple(c.path for c in changes if c.action != "delete"),
                        tuple(c.path for c in changes if c.action == "delete"), dropped, tuple(changes),
                        now.skipped, tuple(outside), dry_run)


def _refuse_outside(session_id: str, outside: list[str], what: str) -> None:
    shown = ", ".join(outside[:20]) + (f" and {len(outside) - 20} more" if len(outside) > 20 else "")
    raise RewindRefusedError(
        f"cannot {what} {session_id}: files changed outside the session since it wrote them: {shown}; "
        "nothing was changed. Save or revert those changes, or pass --force to overwrite them")


def _rewind_snapshots(session_id: str, to_turn: int, root: Path, events: list[LoggedEvent],
                      checkpoints: Checkpoints, *, dry_run: bool, force: bool) -> RewindResult:
    log = existing_log_path(session_id)
    calls = [c for t in checkpoints.turns() if t > to_turn for c in checkpoints.calls(t)]
    cut = cut_offset(events, to_turn)
    dropped = sum(1 for e in events if e.end_offset > cut)
    if not calls:  # nothing changed files after that turn: only the conversation goes back
        empty = Snapshot("")
        if not dry_run:
            _save_redo(checkpoints, log, cut, to_turn, None, None)
            atomic_write(log, log.read_bytes()[:cut])
            checkpoints.drop_after(to_turn)
        return _result(to_turn, [], empty, dropped, [], dry_run)
    if not git_available():
        raise RewindRefusedError(f"session {session_id} was snapshotted with git, which is not on PATH now")
    store = store_for(session_id, root)
    try:
        now = store.snapshot()
        outside = _outside_changes(store, calls, now)
        if outside and not force:
            _refuse_outside(session_id, outside, f"rewind to turn {to_turn}:")
        target = Snapshot.from_json(calls[0]["before"])
        if dry_run:
            return _result(to_turn, store.diff(now, target), now, dropped, outside, True)
        store.keep(now.tree, f"{session_id}/rewind-{to_turn}")
        _save_redo(checkpoints, log, cut, to_turn, now, target)
        changes = store.restore(now, target)
    except SnapshotError as exc:
        raise RewindRefusedError(f"cannot rewind {session_id}: {exc}") from None
    except OSError as exc:
        raise RewindRefusedError(f"rewinding {session_id} stopped at a file it could not restore "
                                 f"({exc}); `codeloop redo {session_id}` puts back what it changed") from None
    atomic_write(log, log.read_bytes()[:cut])
    checkpoints.drop_after(to_turn)
    return _result(to_turn, changes, now, dropped, outside, False)


def _redo_dir(checkpoints: Checkpoints) -> Path:
    return checkpoints.directory / "redo"


def _save_redo(checkpoints: Checkpoints, log: Path | None, cut: int, to_turn: int,
               undone: Snapshot | None, restored: Snapshot | None) -> None:
    """Keep what a rewind takes away, so that :func:`redo` (:func:`redo_run`) can put it back;
    ``log``: the session's log cut at ``cut`` (None: a run has no conversation to cut)."""
    folder = _redo_dir(checkpoints)
    folder.mkdir(parents=True, exist_ok=True)
    number = max((int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit()), default=0) + 1
    manifests = {str(t): checkpoints.load_manifest(t) for t in checkpoints.turns() if t > to_turn}
    if log is not None:
        atomic_write(folder / f"{number}.log", log.read_bytes()[cut:])
    atomic_write(folder / f"{number}.json", json.dumps({
        "to_turn": to_turn, "cut": cut, "manifests": manifests,
        "undone": None if undone is None else undone.to_json(),
        "restored": None if restored is None else restored.to_json()}).encode())


def undo(session_id: str, workspace: Path | str | None = None, *, dry_run: bool = False,
         force: bool = False) -> RewindResult:
    """Rewind the last turn that changed files (and the conversation from it on); a session
    whose turns changed no file loses its last turn."""
    existing_log_path(session_id)
    events = load_events(session_id)
    total = count_turns(events)
    if total == 0:
        raise RewindRefusedError(f"session {session_id} has no turn to undo")
    root = _workspace(session_id, events, workspace)
    checkpoints = Checkpoints(session_id, root)
    changing = [t for t in checkpoints.turns() if checkpoints.calls(t) or checkpoints.changes(t)
                or checkpoints.uncovered(t)]
    last = changing[-1] if changing else total
    return rewind(session_id, last - 1, root, dry_run=dry_run, force=force)


def redo(session_id: str, workspace: Path | str | None = None, *, dry_run: bool = False,
         force: bool = False) -> RewindResult:
    """Take back the last rewind or undo: its files and its conversation come back.

    Refuses when the session went on since (its log grew) or, unless ``force``, when files
    changed since the rewind."""
    log = existing_log_path(session_id)
    events = load_events(session_id)
    root = _workspace(session_id, events, workspace)
    checkpoints = Checkpoints(session_id, root)
    folder = _redo_dir(checkpoints)
    numbers = sorted(int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit()) if folder.is_dir() else []
    if not numbers:
        raise RewindRefusedError(f"session {session_id} has no rewind or undo to redo")
    record = json.loads((folder / f"{numbers[-1]}.json").read_text())
    tail = (folder / f"{numbers[-1]}.log").read_bytes()
    if log.stat().st_size != int(record["cut"]):
        raise RewindRefusedError(f"session {session_id} went on after the rewind; redo would lose what came "
                                 "since, so nothing was changed")
    done = _redo_files(session_id, store_for(session_id, root), record, count_turns(events), dry_run=dry_run, force=force)
    if dry_run:
        return done
    atomic_write(log, log.read_bytes() + tail)
    _redone(checkpoints, record, folder / f"{numbers[-1]}.json")
    (folder / f"{numbers[-1]}.log").unlink()
    return replace(done, turn=count_turns(load_events(session_id)))


def _redo_files(key: str, store: SnapshotStore, record: dict[str, Any], turn: int, *, dry_run: bool,
                force: bool) -> RewindResult:
    """Put back the files of the rewind ``record`` (for a dry run, say which): refused, unless
    ``force``, when files changed since the rewind."""
    undone, restored = _snap(record["undone"]), _snap(record["restored"])
    if undone is None or restored is None:  # that rewind changed no file
        return _result(turn, [], Snapshot(""), 0, [], dry_run)
    try:
        now = store.snapshot()
        outside = [c.path for c in store.diff(restored, now)]
        if outside and not force:
            _refuse_outside(key, outside, "redo")
        if dry_run:
            return _result(turn, store.diff(now, undone), now, 0, outside, True)
        changes = store.restore(now, undone)
    except SnapshotError as exc:
        raise RewindRefusedError(f"cannot redo {key}: {exc}") from None
    except OSError as exc:
        raise RewindRefusedError(f"redo of {key} stopped at a file it could not write ({exc})") from None
    return _result(turn, changes, now, 0, outside, False)


def _redone(checkpoints: Checkpoints, record: dict[str, Any], path: Path) -> None:
    """The rewind ``record`` (kept at ``path``) was taken back: its checkpoints return, it goes."""
    for turn, manifest in record["manifests"].items():
        if manifest is not None:
            checkpoints.restore_manifest(int(turn), manifest)
    path.unlink()


def run_checkpoints(key: str, workspace: Path | str, *, snapshots: bool = True) -> Checkpoints | None:
    """Snapshots of one unit of work that is no session (a spaces run, a relay reply) under
    ``key``; None without git. The unit holds the workspace while it runs, so no file watcher is
    needed: its first snapshot scans the workspace, later ones take the paths each call names
    (a call that names none is followed by a full scan). Called in a worker thread.
    ``snapshots=False``: none are taken; each call that may change files is only marked, so a
    rewind of the unit refuses, naming them, instead of restoring nothing."""
    root = Path(workspace).resolve()
    if not snapshots:
        return Checkpoints(key, root, watch=False, marks_only=True)
    if not git_available():
        return None
    return Checkpoints(key, root, store=store_for(key, root, index=UNIT_INDEX), watch=False)


def rewind_run(key: str, workspace: Path | str, *, after: int = -1, dry_run: bool = False,
               force: bool = False) -> RewindResult:
    """Put ``workspace`` back as it was before the first change of the run ``key``
    (:func:`run_checkpoints`) in a step after ``after`` (-1: every step; a spaces run has one);
    refuses (unless ``force``) when files changed outside the run."""
    root = Path(workspace).resolve()
    checkpoints = Checkpoints(key, root)
    uncovered = [u for t in checkpoints.turns() if t > after for u in checkpoints.uncovered(t)]
    if uncovered:
        ran = "; ".join(u.describe() for u in uncovered)
        raise RewindRefusedError(
            f"cannot rewind {key}: {ran} ran without a snapshot (undo was off), so its changes to files "
            "cannot be undone; nothing was restored")
    calls = [c for t in checkpoints.turns() if t > after for c in checkpoints.calls(t)]
    if not calls:
        return _result(max(after, 0), [], Snapshot(""), 0, [], dry_run)
    store = store_for(key, root, index=UNIT_INDEX)
    try:
        now = store.snapshot()
        outside = _outside_changes(store, calls, now)
        if outside and not force:
            _refuse_outside(key, outside, "rewind")
        target = Snapshot.from_json(calls[0]["before"])
        if dry_run:
            return _result(max(after, 0), store.diff(now, target), now, 0, outside, True)
        store.keep(now.tree, f"{key}/rewind")
        _save_redo(checkpoints, None, 0, after, now, target)
        changes = store.restore(now, target)
    except SnapshotError as exc:
        raise RewindRefusedError(f"cannot rewind {key}: {exc}") from None
    except OSError as exc:
        raise RewindRefusedError(f"rewinding {key} stopped at a file it could not restore ({exc}); "
                                 "a redo puts back what it changed") from None
    checkpoints.drop_after(after)
    return _result(max(after, 0), changes, now, 0, outside, False)


def redo_run(key: str, workspace: Path | str, *, dry_run: bool = False, force: bool = False) -> RewindResult:
    """Take back the last :func:`rewind_run` of the run ``key``: its files come back. Refused
    when the run changed files again since (a resumed spaces run, a later relay reply) and,
    unless ``force``, when files changed since the rewind."""
    root = Path(workspace).resolve()
    checkpoints = Checkpoints(key, root)
    folder = _redo_dir(checkpoints)
    numbers = sorted(int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit()) if folder.is_dir() else []
    if not numbers:
        raise RewindRefusedError(f"{key} has no rewind to redo")
    path = folder / f"{numbers[-1]}.json"
    record = json.loads(path.read_text())
    to_turn = int(record["to_turn"])
    if any(checkpoints.calls(t) for t in checkpoints.turns() if t > to_turn):
        raise RewindRefusedError(f"{key} changed files again after the rewind; redo would undo that, so "
                                 "nothing was changed")
    done = _redo_files(key, store_for(key, root, index=UNIT_INDEX), record, max(to_turn, 0), dry_run=dry_run,
                       force=force)
    if not dry_run:
        _redone(checkpoints, record, path)
    return done
