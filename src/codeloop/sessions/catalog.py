"""The index of sessions: one :class:`SessionInfo` per log, read from the log itself.

There is no separate index file to keep consistent with the logs: a summary needs only
the head of a log (``session_start``, first ``user_input``) and its tail (last event), so
listing stays fast however long the sessions are.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from codeloop.sessions.log import LoggedEvent, parse_log
from codeloop.sessions.state_dir import existing_log_path, sessions_dir

_HEAD = 256 * 1024
_TAIL = 64 * 1024


@dataclass(frozen=True)
class SessionInfo:
    """A summary of one session log."""

    id: str
    """Session id (the log's file name)."""
    workspace: str
    """Working directory from ``session_start`` (``""`` when the log has none)."""
    model: str
    """Model of the first run."""
    started: str
    """ISO time of the first event."""
    last_event: str
    """ISO time of the last event."""
    status: str
    """Reason of the final ``session_end`` (``completed``, ``aborted``, ``error``, ``closed``...),
    or ``interrupted`` when the log ends without one (still running, or the process died)."""
    first_input: str
    """The first user input (the task), ``""`` if none yet."""
    path: str
    """Absolute path of the log file."""


def _read_head_tail(path: Path) -> tuple[list[LoggedEvent], list[LoggedEvent]]:
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(0)
        head = f.read(_HEAD)
        if size > _HEAD:
            f.seek(max(_HEAD, size - _TAIL))
            tail = f.read()
        else:
            tail = b""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        head_events = parse_log(head[: head.rfind(b"\n") + 1], str(path))
        tail_events = parse_log(tail[tail.find(b"\n") + 1:], str(path)) if tail else []
    return head_events, tail_events or head_events


def paused_input(events: list[LoggedEvent]) -> bool:
    """True when the last input of ``events`` was stopped by a budget limit (issue 36)."""
    ends = [e for e in events if e.kind == "session_end" and e.data.get("state") != "closed"]
    return bool(ends) and ends[-1].data.get("reason") in ("budget", "turn_limit")


def session_info(session_id: str) -> SessionInfo:
    """The summary of one session; SessionNotFoundError when it has no log."""
    return _info(existing_log_path(session_id))


def _info(path: Path) -> SessionInfo:
    head, tail = _read_head_tail(path)
    start = next((e for e in head if e.kind == "session_start"), None)
    first_input = next((e for e in head if e.kind == "user_input"), None)
    last = tail[-1] if tail else None
    status = "interrupted"
    if last is not None and last.kind == "session_end":
        status = str(last.data.get("reason", "closed"))
        if paused_input(tail):
            status = "paused"  # a limit stopped the last input: --resume with a higher one goes on
    return SessionInfo(
        id=path.name.removesuffix(".jsonl"),
        workspace=str(start.data.get("working_directory", "")) if start else "",
        model=str(start.data.get("model", "")) if start else "",
        started=head[0].timestamp if head else "",
        last_event=last.timestamp if last else "",
        status=status,
        first_input=str(first_input.data.get("content", "")) if first_input else "",
        path=str(path),
    )


def list_sessions(workspace: str | Path | None = None) -> list[SessionInfo]:
    """Every session, oldest first; only those of ``workspace`` (compared resolved) if given."""
    directory = sessions_dir()
    if not directory.is_dir():
        return []
    infos = [_info(p) for p in directory.glob("*.jsonl") if p.is_file()]
    if workspace is not None:
        wanted = str(Path(workspace).resolve())
        infos = [i for i in infos if i.workspace and str(Path(i.workspace).resolve()) == wanted]
    return sorted(infos, key=lambda i: (i.started, i.id))


def latest_session(workspace: str | Path) -> SessionInfo | None:
    """The session of ``workspace`` with the most recent event (for ``--continue``), or None."""
    infos = list_sessions(workspace)
    return max(infos, key=lambda i: (i.last_event, i.started), default=None)
