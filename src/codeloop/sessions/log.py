"""The per-session JSONL event log (issue 9 "Sessions").

Each line is one event in its wire form ``{kind, timestamp, session_id, data}``
(:func:`codeloop.agent.events.event_to_json`). Lines are appended with ``O_APPEND``, written
in one ``write`` and ``fsync``-ed before :meth:`SessionLog.append` returns, so a crash
(``kill -9``, power loss) loses at most the line being written. Readers ignore a torn last
line with a warning; the next writer cuts it off before appending. A write that fails (a
full disk) cuts its partial line at once and raises an OSError naming the log.

Streaming deltas (``assistant_text_delta``, ``tool_call_output_delta``) are not recorded by
default: their content is repeated in full by ``assistant_text_end`` and ``tool_call_end``,
and an ``fsync`` per token would slow streaming down for nothing.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.agent.events import EventKind, SessionEvent, event_to_json
from codeloop.environments.owned_files import read_owned_file
from codeloop.sessions.state_dir import check_session_id, existing_log_path, log_path

DELTA_KINDS = frozenset({EventKind.ASSISTANT_TEXT_DELTA.value, EventKind.TOOL_CALL_OUTPUT_DELTA.value})
"""Kinds skipped unless ``SessionLog(record_deltas=True)``."""


class SessionLogWarning(UserWarning):
    """A log line could not be read (torn by a crash, or corrupted) and was skipped."""


@dataclass(frozen=True)
class LoggedEvent:
    """One event read back from a log."""

    kind: str
    """The wire ``kind`` (an :class:`EventKind` value)."""
    timestamp: str
    """ISO 8601 UTC time of the event."""
    session_id: str
    """The id of the agent session that emitted it (a resumed run has a new one)."""
    data: dict[str, Any]
    """The event's payload, as in the wire form."""
    line: int
    """1-based line number in the log."""
    end_offset: int
    """Byte offset just after this line (where a truncation keeping it would cut)."""


class SessionLog:
    """Append-only event log of one session; use as a context manager or call :meth:`close`.

    Opening an existing log (``--resume``) appends to it. Thread-safe per line: each append
    is a single ``write`` on an ``O_APPEND`` descriptor.
    """

    def __init__(self, session_id: str, *, record_deltas: bool = False) -> None:
        self.session_id = check_session_id(session_id)
        self.path = log_path(session_id)
        self.record_deltas = record_deltas
        # Logs hold code, command output and prompts: private to the user.
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _cut_torn_tail(self.path)
        self._fd: int | None = os.open(
            self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def append(self, event: SessionEvent) -> None:
        """Record ``event`` durably (returns after ``fsync``); usable as a session listener."""
        self.append_json(event_to_json(event))

    def append_json(self, wire: dict[str, Any]) -> None:
        """Record an event already in wire form."""
        if self._fd is None:
            raise ValueError(f"session log {self.path} is closed")
        if wire.get("kind") in DELTA_KINDS and not self.record_deltas:
            return
        line = (json.dumps(wire, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        size = os.fstat(self._fd).st_size
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)
        except OSError as exc:
            # A full disk takes part of a line: cut it, so the log ends at its last whole event.
            with suppress(OSError):
                os.ftruncate(self._fd, size)
            raise OSError(exc.errno, f"{exc.strerror or exc} writing {self.path} (free some space, then "
                                     f"continue with: codeloop run --resume {self.session_id})") from exc

    def listener(self, on_error: Callable[[Exception], None]) -> Callable[[SessionEvent], None]:
        """A session listener that never raises (session listeners must not): the first write
        failure (disk full, log removed...) goes to ``on_error`` and recording stops, while
        the session itself goes on."""
        failed = False

        def record(event: SessionEvent) -> None:
            nonlocal failed
            if failed:
                return
            try:
                self.append(event)
            except (OSError, ValueError) as exc:
                failed = True
                on_error(exc)

        return record

    def close(self) -> None:
        """Close the file; further appends raise ValueError."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cut_torn_tail(path: Path) -> None:
    """Drop a partial last line left by a crash, so the next line starts on its own."""
    try:
        with open(path, "rb+") as f:
            size = pos = f.seek(0, os.SEEK_END)
            while pos > 0:  # back to the last newline, 64 KiB at a time
                start = max(0, pos - 65536)
                f.seek(start)
                newline = f.read(pos - start).rfind(b"\n")
                if newline >= 0:
                    pos = start + newline + 1
                    break
                pos = start
            if pos < size:
                f.truncate(pos)
                f.flush()
                os.fsync(f.fileno())
    except FileNotFoundError:
        return


def parse_log(raw: bytes, source: str) -> list[LoggedEvent]:
    """Events of a log's bytes; unreadable lines are skipped with a :class:`SessionLogWarning`
    naming ``source`` and the line (a torn last line is the expected case after a crash)."""
    events: list[LoggedEvent] = []
    offset = 0
    lines = raw.split(b"\n")
    for number, chunk in enumerate(lines, start=1):
        is_last = number == len(lines)
        if is_last and not chunk:
            break
        end = offset + len(chunk) + (0 if is_last else 1)
        event = _parse_line(chunk, number, end)
        offset = end
        if event is not None and not is_last:
            events.append(event)
            continue
        what = "torn last line (a crash while it was written)" if is_last else "unreadable line"
        warnings.warn(f"{source}:{number}: {what} ignored", SessionLogWarning, stacklevel=3)
    return events


def _parse_line(chunk: bytes, number: int, end: int) -> LoggedEvent | None:
    try:
        obj = json.loads(chunk)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(obj, dict):
        return None
    kind, ts, sid, data = obj.get("kind"), obj.get("timestamp"), obj.get("session_id"), obj.get("data")
    if not (isinstance(kind, str) and isinstance(ts, str) and isinstance(sid, str) and isinstance(data, dict)):
        return None
    return LoggedEvent(kind, ts, sid, data, number, end)


MAX_LOG_BYTES = 256 * 1024 * 1024
"""Largest session log read back (a bigger one is refused unread: a ``WorkspaceError``)."""


def load_events(session_id: str) -> list[LoggedEvent]:
    """Every readable event of the session's log, in order; SessionNotFoundError if absent,
    ``WorkspaceError`` when it is not a regular file or over :data:`MAX_LOG_BYTES`."""
    path = existing_log_path(session_id)
    return parse_log(read_owned_file(path, max_bytes=MAX_LOG_BYTES), str(path))


def events_to_jsonl(events: Iterable[LoggedEvent]) -> str:
    """The events back in wire form, one JSON object per line."""
    return "".join(
        json.dumps({"kind": e.kind, "timestamp": e.timestamp, "session_id": e.session_id, "data": e.data},
                   ensure_ascii=False) + "\n"
        for e in events
    )
