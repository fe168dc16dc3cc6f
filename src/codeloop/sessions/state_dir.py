"""Where session state lives: ``user_state_dir("codeloop")/sessions`` or ``$CODELOOP_STATE_DIR/sessions``.

One session is ``<id>.jsonl`` (the event log) plus ``<id>.checkpoints/`` (file snapshots for
rewind). Ids are checked here, once, so no caller can build a path from ``../x``.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import platformdirs

STATE_DIR_VARIABLE = "CODELOOP_STATE_DIR"
"""Environment variable that replaces the platform's user state directory."""

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class SessionNotFoundError(LookupError):
    """No session log has this id (or the id is not a valid session id)."""


@functools.cache
def _platform_state_dir() -> str:
    # platformdirs reads the environment and the home directory on every call: a spaces run
    # asked for it several times (it reads only what a process does not change, XDG_STATE_HOME
    # and HOME, so once per process is the same answer).
    return platformdirs.user_state_dir("codeloop")


def sessions_dir() -> Path:
    """The directory holding every session's log (not created here)."""
    return Path(os.environ.get(STATE_DIR_VARIABLE) or _platform_state_dir()) / "sessions"


def snapshots_dir() -> Path:
    """Where codeloop's snapshot repositories live, one per workspace (issue 35)."""
    return Path(os.environ.get(STATE_DIR_VARIABLE) or _platform_state_dir()) / "snapshots"


def check_session_id(session_id: str) -> str:
    """``session_id`` unchanged when it is a safe file name; ValueError naming it otherwise."""
    if not _ID.match(session_id) or ".." in session_id:
        raise ValueError(
            f"invalid session id {session_id!r}: use the id printed by 'codeloop sessions list' "
            "(letters, digits, '.', '_' and '-')"
        )
    return session_id


def log_path(session_id: str) -> Path:
    """The JSONL event log of ``session_id``."""
    return sessions_dir() / f"{check_session_id(session_id)}.jsonl"


def checkpoints_path(session_id: str) -> Path:
    """The checkpoint directory of ``session_id``."""
    return sessions_dir() / f"{check_session_id(session_id)}.checkpoints"


def compacted_path(session_id: str) -> Path:
    """The tool outputs compaction took out of ``session_id``'s history, one file per call
    (issue 36; ``recall_output`` reads them back)."""
    return sessions_dir() / f"{check_session_id(session_id)}.compacted"


def existing_log_path(session_id: str) -> Path:
    """The log of ``session_id``; SessionNotFoundError when there is none."""
    path = log_path(session_id)
    if not path.is_file():
        raise SessionNotFoundError(
            f"no session {session_id!r} in {sessions_dir()} (list them with 'codeloop sessions list')"
        )
    return path


def approvals_db_path() -> Path:
    """The pending-call store of ``codeloop run``, ``codeloop tool`` and the relay (issue 34):
    ``approvals.sqlite3`` beside ``sessions/``, shared by every process of the user."""
    return sessions_dir().parent / "approvals.sqlite3"
