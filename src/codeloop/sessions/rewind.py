"""Rewind: put the workspace files and the conversation back to the end of a turn (issue 9).

All-or-nothing on the checks: no later turn may hold a call no checkpoint covers (a shell
command, an MCP tool: what it changed cannot be put back), and every file a later turn wrote
must still hold exactly what the session left there (its recorded hash); otherwise
:class:`RewindRefusedError` names the call or the file and nothing is written. Then files are restored byte-exact (atomic writes; files the
session created are deleted), the log is cut after turn N (atomic rewrite), and later
checkpoints are dropped. Directories the session created are left in place, empty.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from codeloop.environments.atomic import atomic_write
from codeloop.environments.errors import WorkspaceError
from codeloop.environments.resolver import resolve_workspace_path
from codeloop.environments.safe_open import atomic_write_beneath, parent_fd
from codeloop.sessions.checkpoints import Checkpoints, count_turns, sha256_of
from codeloop.sessions.log import LoggedEvent, load_events
from codeloop.sessions.state_dir import existing_log_path

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


def cut_offset(events: list[LoggedEvent], to_turn: int) -> int:
    """Byte offset in the log where the events after turn ``to_turn`` begin."""
    seen = 0
    for i, e in enumerate(events):
        if seen == to_turn and e.kind in _NEXT_TURN_KINDS:
            return events[i - 1].end_offset if i else 0
        if e.kind == "assistant_text_end":
            seen += 1
    return events[-1].end_offset if events else 0


def rewind(session_id: str, to_turn: int, workspace: Path | str | None = None) -> RewindResult:
    """Restore files and conversation to the end of turn ``to_turn`` (0: before the first reply).

    ``workspace`` defaults to the session's working directory. Raises RewindRefusedError
    (nothing changed) and SessionNotFoundError.
    """
    log = existing_log_path(session_id)
    events = load_events(session_id)
    total = count_turns(events)
    if to_turn < 0 or to_turn > total:
        raise RewindRefusedError(f"--to {to_turn} is out of range: session {session_id} has turns 0..{total}")
    if workspace is None:
        start = next((e for e in events if e.kind == "session_start"), None)
        if start is None or not start.data.get("working_directory"):
            raise RewindRefusedError(f"session {session_id} records no workspace; pass --workspace DIR")
        workspace = str(start.data["working_directory"])
    root = Path(workspace).resolve()
    checkpoints = Checkpoints(session_id, root)

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
