"""Session logs, resume, checkpoints and rewind for ``codeloop run`` (issue 9).

Public API::

    record_session(session, workspace, resume=None) -> Recording   the one call of `codeloop run`
    SessionLog(session_id)                 durable JSONL event log; session.subscribe(log.append)
    load_events(id) -> list[LoggedEvent]   read a log back (torn last line ignored, warned)
    list_sessions(workspace=None), latest_session(workspace), session_info(id)
    rebuild_history(events) -> list[Turn]  the turns to continue a session
    to_markdown(id, events), events_to_jsonl(events)
    Checkpoints(id, workspace)             file snapshots per turn; around(call) (Session.checkpoint), observe(event)
    rewind(id, to_turn, workspace=None, dry_run=, force=)  restore files + cut the log; RewindRefusedError
    undo(id), redo(id)                     take back the last changing turn / the last rewind
"""

from codeloop.sessions.catalog import SessionInfo, latest_session, list_sessions, session_info
from codeloop.sessions.checkpoints import Checkpoints, FileChange
from codeloop.sessions.log import LoggedEvent, SessionLog, SessionLogWarning, events_to_jsonl, load_events
from codeloop.sessions.recorder import Recording, record_session
from codeloop.sessions.replay import rebuild_history, to_markdown
from codeloop.sessions.rewind import RewindRefusedError, RewindResult, redo, rewind, undo
from codeloop.sessions.state_dir import STATE_DIR_VARIABLE, SessionNotFoundError, sessions_dir

__all__ = [
    "STATE_DIR_VARIABLE",
    "Checkpoints",
    "FileChange",
    "LoggedEvent",
    "Recording",
    "RewindRefusedError",
    "RewindResult",
    "SessionInfo",
    "SessionLog",
    "SessionLogWarning",
    "SessionNotFoundError",
    "events_to_jsonl",
    "latest_session",
    "list_sessions",
    "load_events",
    "rebuild_history",
    "record_session",
    "redo",
    "rewind",
    "session_info",
    "sessions_dir",
    "to_markdown",
    "undo",
]
