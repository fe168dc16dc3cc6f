"""Relay session state: ``sessions/{sessionId}.json`` (relay spec "Session State").

The file holds the spec's fields (``sessionId``, ``task``, ``sequenceNumber``,
``isComplete``, ``createdAt``, ``updatedAt``, ``lastResults``, ``readFileRequests``) plus
ours: ``protocolVersion``, ``workspace`` (absolute path), ``summary`` (the DONE text),
``policy`` (the session's policy preset), ``heldCommand`` (a command waiting for the
person's approval, :mod:`codeloop.relay.approvals`) and ``limits`` (steps and time,
:mod:`codeloop.relay.limits`).

Invariant: ``sequenceNumber`` is the number of the newest outbox, the one waiting for an
answer; ``lastResults`` and ``readFileRequests`` are what that outbox shows, so the
outbox can be written again from this file alone (``relay resume``). The file is the
commit point of a step: it is replaced atomically after the next outbox exists.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeloop.environments.atomic import atomic_write
from codeloop.environments.errors import WorkspaceError
from codeloop.environments.owned_files import read_owned_file
from codeloop.policy import PRESET_NAMES
from codeloop.relay.approvals import HeldCommand
from codeloop.relay.limits import SessionLimits
from codeloop.relay.outbox_texts import PROTOCOL_VERSION
from codeloop.relay.results import CommandResult

SESSION_ID = re.compile(r"[0-9a-f]{8}")
"""Session ids are 8 lowercase hex characters (spec "Session ID")."""


class SessionFileError(ValueError):
    """A session file is missing, unreadable or not in the expected shape."""


def utc_now() -> str:
    """An ISO-8601 UTC timestamp with a ``Z`` suffix, as in the spec's example.

    Milliseconds are kept so that the most recently updated session is well defined."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_session_id(sessions_dir: Path) -> str:
    """A fresh 8-hex-character id not used by any session file in ``sessions_dir``."""
    while True:
        candidate = secrets.token_hex(4)
        if not (sessions_dir / f"{candidate}.json").exists():
            return candidate


@dataclass(frozen=True)
class SessionState:
    """One relay session, as persisted."""

    session_id: str
    """8 hex characters."""
    task: str
    """The user's task, verbatim."""
    workspace: str
    """Absolute path of the workspace the commands act on."""
    sequence_number: int = 1
    """Number of the newest outbox (1-based)."""
    is_complete: bool = False
    """True once a DONE command was processed."""
    created_at: str = field(default_factory=utc_now)
    """ISO-8601 UTC."""
    updated_at: str = field(default_factory=utc_now)
    """ISO-8601 UTC of the last change."""
    last_results: tuple[CommandResult, ...] = ()
    """Results shown in the newest outbox."""
    read_file_requests: tuple[str, ...] = ()
    """Paths whose contents the newest outbox shows (kept until answered)."""
    summary: str | None = None
    """The DONE summary once complete."""
    protocol_version: str = PROTOCOL_VERSION
    """Protocol version the session's outboxes follow."""
    policy: str = "permissive"
    """The policy preset judging every command (chosen by ``relay new``; older files: permissive)."""
    held: HeldCommand | None = None
    """A command of the reply to this outbox waiting for approval; the reply continues once
    it is answered (the outbox ``sequence_number + 1`` says it is waiting meanwhile)."""
    limits: SessionLimits = field(default_factory=SessionLimits)
    """Limits on steps and command time, and the command time used (``relay new --max-steps``)."""

    def outbox_name(self, sequence: int | None = None) -> str:
        """``{sessionId}_seq{NNNN}.txt`` for ``sequence`` (default: the newest)."""
        return outbox_file_name(self.session_id, self.sequence_number if sequence is None else sequence)

    def advanced(self, results: tuple[CommandResult, ...], read_requests: tuple[str, ...],
                 summary: str | None) -> SessionState:
        """The state after one answer: next sequence, or complete when ``summary`` is set."""
        changes: dict[str, Any] = {"sequence_number": self.sequence_number + 1,
                                   "read_file_requests": read_requests}
        if summary is not None:
            changes = {"is_complete": True, "summary": summary, "read_file_requests": ()}
        return replace(self, last_results=results, updated_at=utc_now(), held=None, **changes)

    def to_json(self) -> dict[str, Any]:
        """The on-disk form (spec field names first)."""
        return {
            "sessionId": self.session_id,
            "task": self.task,
            "sequenceNumber": self.sequence_number,
            "isComplete": self.is_complete,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "lastResults": [r.to_json() for r in self.last_results],
            "readFileRequests": list(self.read_file_requests),
            "protocolVersion": self.protocol_version,
            "workspace": self.workspace,
            "summary": self.summary,
            "policy": self.policy,
            "heldCommand": None if self.held is None else self.held.to_json(),
            "limits": self.limits.to_json(),
        }

    @classmethod
    def from_json(cls, data: object) -> SessionState:
        """Validate the on-disk form; raise ``ValueError`` naming the first bad field."""
        if not isinstance(data, dict):
            raise ValueError("the top level must be a JSON object")

        def text(key: str, optional: bool = False) -> Any:
            value = data.get(key)
            if value is None and optional:
                return None
            if not isinstance(value, str):
                raise ValueError(f"field {key} must be text")
            return value

        session_id = text("sessionId")
        if SESSION_ID.fullmatch(session_id) is None:
            raise ValueError(f"field sessionId must be 8 hex characters, got {session_id!r}")
        seq = data.get("sequenceNumber")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
            raise ValueError("field sequenceNumber must be a whole number of at least 1")
        complete = data.get("isComplete")
        if not isinstance(complete, bool):
            raise ValueError("field isComplete must be true or false")
        results_raw = data.get("lastResults", [])
        requests_raw = data.get("readFileRequests", [])
        if not isinstance(results_raw, list):
            raise ValueError("field lastResults must be a list")
        if not isinstance(requests_raw, list) or not all(isinstance(p, str) for p in requests_raw):
            raise ValueError("field readFileRequests must be a list of paths")
        policy = data.get("policy", "permissive")
        if policy not in PRESET_NAMES:
            raise ValueError(f"field policy must be one of {', '.join(PRESET_NAMES)}")
        held = data.get("heldCommand")
        if isinstance(held, dict) and "pending" not in held:
            # Held before issue 34, with its answer in this file: the step applies the reply
            # again from its journal and the policy asks again, now through the store.
            held = None
        results = []
        for i, item in enumerate(results_raw):
            try:
                results.append(CommandResult.from_json(item))
            except ValueError as exc:
                raise ValueError(f"lastResults[{i}]: {exc}") from None
        return cls(session_id, text("task"), text("workspace"), seq, complete, text("createdAt"),
                   text("updatedAt"), tuple(results), tuple(requests_raw), text("summary", optional=True),
                   text("protocolVersion", optional=True) or PROTOCOL_VERSION, policy,
                   None if held is None else HeldCommand.from_json(held), SessionLimits.from_json(data.get("limits")))


def outbox_file_name(session_id: str, sequence: int) -> str:
    """``{sessionId}_seq{sequence:04d}.txt`` (spec "Outbox File Naming")."""
    return f"{session_id}_seq{sequence:04d}.txt"


def session_path(sessions_dir: Path, session_id: str) -> Path:
    """Where a session's JSON lives."""
    return sessions_dir / f"{session_id}.json"


def save_session(sessions_dir: Path, state: SessionState) -> Path:
    """Write the session file atomically (spec "Atomic Writes"); return its path."""
    path = session_path(sessions_dir, state.session_id)
    data = json.dumps(state.to_json(), indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, data.encode("utf-8"))
    return path


def load_session(sessions_dir: Path, session_id: str) -> SessionState:
    """Read and validate one session; :class:`SessionFileError` says what to fix."""
    if SESSION_ID.fullmatch(session_id) is None:
        raise SessionFileError(f"{session_id!r} is not a session id: ids are 8 hex characters like "
                               "'a1b2c3d4'")
    path = session_path(sessions_dir, session_id)
    try:
        raw = read_owned_file(path).decode("utf-8")  # a regular file of bounded size, never a FIFO
    except FileNotFoundError:
        raise SessionFileError(f"no session {session_id} in {sessions_dir}; list sessions with "
                               "'codeloop relay status'") from None
    except (OSError, UnicodeDecodeError, WorkspaceError) as exc:
        raise SessionFileError(f"cannot read {path}: {exc}") from None
    try:
        state = SessionState.from_json(json.loads(raw))
    except (json.JSONDecodeError, ValueError) as exc:
        raise SessionFileError(f"{path} is damaged ({exc}); fix or remove the file") from None
    if state.session_id != session_id:
        raise SessionFileError(f"{path} holds session {state.session_id}, not {session_id}; "
                               "rename or remove it")
    return state


def list_sessions(sessions_dir: Path) -> list[SessionState | SessionFileError]:
    """Every session file, newest update first; damaged files come back as errors."""
    found: list[SessionState | SessionFileError] = []
    if not sessions_dir.is_dir():
        return found
    for path in sorted(sessions_dir.glob("*.json")):
        try:
            found.append(load_session(sessions_dir, path.stem))
        except SessionFileError as exc:
            found.append(exc)
    states = sorted((s for s in found if isinstance(s, SessionState)),
                    key=lambda s: (s.updated_at, s.created_at), reverse=True)
    errors = [e for e in found if isinstance(e, SessionFileError)]
    return [*states, *errors]
