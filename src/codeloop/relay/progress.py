"""What a relay step reports while it works, for the console and for ``--json``.

One closed union, :data:`RelayEvent`; ``to_json`` gives the wire form
``{"kind": ..., **fields}`` used by ``codeloop relay ... --json``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from codeloop.relay.results import CommandResult


@dataclass(frozen=True)
class ReplyStarted:
    """A reply file is being applied as the answer to one outbox."""

    session_id: str
    sequence: int
    """The outbox it answers."""
    source: str
    """The inbox file name."""
    already_applied: int = 0
    """Commands applied by an interrupted earlier step (not applied again)."""
    kind: Literal["reply_started"] = "reply_started"


@dataclass(frozen=True)
class CommandFinished:
    """One command of the reply has a result."""

    index: int
    """0-based position in the reply."""
    result: CommandResult
    replayed: bool = False
    """True when the result comes from the journal of an interrupted step."""
    kind: Literal["command_finished"] = "command_finished"


@dataclass(frozen=True)
class ModelMessage:
    """A ``[MESSAGE]`` for the user."""

    text: str
    kind: Literal["model_message"] = "model_message"


@dataclass(frozen=True)
class OutboxWritten:
    """The next outbox is ready to be pasted into the chat."""

    session_id: str
    sequence: int
    path: Path
    kind: Literal["outbox_written"] = "outbox_written"


@dataclass(frozen=True)
class SessionCompleted:
    """``[DONE]`` was processed; the session has ended."""

    session_id: str
    summary: str
    skipped_after_done: int = 0
    """Commands written after ``[DONE]`` in the same reply, not run."""
    kind: Literal["session_completed"] = "session_completed"


@dataclass(frozen=True)
class ReplySkipped:
    """An inbox file was not applied; it is left in place (empty, unreadable) or moved to
    ``inbox/rejected/`` (not text)."""

    path: Path
    reason: str
    """What is wrong and how to fix it."""
    blocking: bool
    """True when the file must be fixed before later replies can be applied."""
    kind: Literal["reply_skipped"] = "reply_skipped"


@dataclass(frozen=True)
class LimitReached:
    """A limit of the session (steps or time) is used up; no further reply is applied until it
    is raised (:mod:`codeloop.relay.limits`)."""

    session_id: str
    limit: Literal["steps", "time"]
    message: str
    """The outbox's notice, in plain words."""
    kind: Literal["limit_reached"] = "limit_reached"


RelayEvent = (ReplyStarted | CommandFinished | ModelMessage | OutboxWritten | SessionCompleted | ReplySkipped
              | LimitReached)
"""Every event a step emits."""

EventSink = Callable[[RelayEvent], None]
"""Receives events as they happen; must not raise."""


def event_to_json(event: RelayEvent) -> dict[str, Any]:
    """``{"kind": ..., fields...}`` with paths as strings and results as objects."""
    data = {key: str(value) if isinstance(value, Path) else value for key, value in asdict(event).items()}
    if isinstance(event, CommandFinished):
        data["result"] = event.result.to_json()
    return data
