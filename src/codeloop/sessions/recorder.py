"""Wire a live agent Session to its log, checkpoints and (on resume) its past conversation.

This is the one call ``codeloop run`` makes::

    recording = record_session(session, workspace, resume=args.resume, on_error=warn)
    ...                      # session.submit(...)
    recording.close()        # after session.close()

Call it before the session's first input: the history must be in place and the pipeline's
checkpoint hook set before the first tool call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop.agent.budget import price_of
from codeloop.agent.events import CheckpointEvent
from codeloop.agent.session import Session
from codeloop.policy.approval import Effect
from codeloop.sessions.checkpoints import Checkpoints, count_turns
from codeloop.sessions.log import LoggedEvent, SessionLog, load_events
from codeloop.sessions.replay import rebuild_history, spent_in_log
from codeloop.sessions.rewind import store_for
from codeloop.sessions.snapshots import KEEP_COUNT, KEEP_DAYS, SnapshotError, git_available
from codeloop.sessions.state_dir import compacted_path


@dataclass
class Recording:
    """The log and checkpoints attached to one session."""

    log_id: str
    """Id of the log written (the resumed session's id on resume, else ``session.id``)."""
    log: SessionLog
    checkpoints: Checkpoints
    _unsubscribe: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Stop recording and close the log (idempotent)."""
        for undo in self._unsubscribe:
            undo()
        self._unsubscribe.clear()
        self.checkpoints.close()
        self.log.close()


def _remember_seen_files(session: Session, events: list[LoggedEvent]) -> None:
    """Files the resumed conversation read or wrote (the paths its successful calls named, by
    their tools' declarations) count as seen by the new session, so write_file does not ask the
    model to read them again (``tools.files.SEEN_FILES``)."""
    from codeloop.tools.files import SEEN_FILES

    registry = session.profile.tool_registry
    started: dict[str, tuple[str, dict[str, Any]]] = {}
    root = session.environment.working_directory()
    for event in events:
        if event.kind == "tool_call_start":
            started[str(event.data.get("call_id"))] = (str(event.data.get("tool_name")),
                                                       dict(event.data.get("arguments") or {}))
        elif event.kind == "tool_call_end" and not event.data.get("error"):
            name, args = started.get(str(event.data.get("call_id")), ("", {}))
            call = registry.request(name, args)
            if call.effects & {Effect.READ, Effect.WRITE}:
                for path in call.paths or ():
                    SEEN_FILES.saw_path(session.id, root, path)


def record_session(session: Session, workspace: Path | str, *, resume: str | None = None,
                   on_error: Callable[[Exception], None] = lambda exc: None,
                   on_checkpoint_error: Callable[[str], None] = lambda message: None,
                   snapshot_options: Mapping[str, Any] | None = None) -> Recording:
    """Attach logging and checkpoints to ``session``; with ``resume``, first load that log's
    conversation into ``session.history`` and continue its log and turn count.

    Raises SessionNotFoundError (unknown ``resume`` id) and ValueError (invalid id). A later
    write failure of the log goes to ``on_error`` once (recording stops there: the caller
    decides whether the session may go on unrecorded); one of a checkpoint goes to
    ``on_checkpoint_error`` (the change was made, it cannot be rewound).

    With git on PATH every changing call, shell included, is covered by whole-workspace
    snapshots (issue 35; old ones are pruned here, once per session), as ``snapshot_options``
    (the config's ``[snapshots]``: ``exclude_dirs``, ``max_file_mb``, ``keep_days``,
    ``keep_count``, ``enabled``) say; ``enabled = false`` or no git: only codeloop's own file
    tools are covered. On an environment whose files are elsewhere (SSH) nothing is
    snapshotted: every changing call is marked uncovered, so a rewind across it refuses.
    """
    log_id = resume or session.id
    turn = 0
    if resume is not None:
        events = load_events(resume)
        for turn_ in rebuild_history(events):
            session.history.append(turn_)
        turn = count_turns(events)
        _remember_seen_files(session, events)
        if session.budget is not None:  # issue 36: a resumed run goes on from what was spent
            session.budget.spent = spent_in_log(events, price_of(session.profile.model))
    session.dropped.directory = compacted_path(log_id)
    log = SessionLog(log_id)
    options = dict(snapshot_options or {})
    store = None
    # The files of an SSH workspace are on the remote host: neither git nor the file
    # checkpoints here can read them (every changing call is marked uncovered instead).
    elsewhere = bool(getattr(session.environment, "files_elsewhere", False))
    if options.get("enabled", True) and git_available() and not elsewhere:
        exclude = options.get("exclude_dirs")
        megabytes = options.get("max_file_mb")
        store = store_for(log_id, Path(workspace), exclude_dirs=None if exclude is None else tuple(exclude),
                          max_file_bytes=None if megabytes is None else int(megabytes) * 1024 * 1024)
        try:
            store.prune(max_age_days=float(options.get("keep_days", KEEP_DAYS)),
                        max_count=int(options.get("keep_count", KEEP_COUNT)))
        except (OSError, SnapshotError) as exc:
            on_checkpoint_error(f"pruning old snapshots: {exc}")
    checkpoints = Checkpoints(log_id, workspace, turn=turn, on_error=on_checkpoint_error, store=store,
                              files_elsewhere=elsewhere,
                              on_checkpoint=lambda data: session.announce(CheckpointEvent, **data))
    session.checkpoint = checkpoints
    session.step = turn
    recording = Recording(log_id, log, checkpoints)
    recording._unsubscribe += [session.subscribe(log.listener(on_error))]
    return recording
