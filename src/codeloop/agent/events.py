"""Session events (loop spec §2.9): one closed list, one frozen dataclass per kind.

Every event carries ``session_id`` and ``timestamp``; the rest of its fields are its
typed payload. The *wire* form ``{kind, timestamp, session_id, data}`` (used by
``codeloop run --json`` and session logs, schema in ``docs/events.schema.json``) is
built in exactly one place, :func:`event_to_json`.

Consumers match every kind and end with ``assert_never``::

    match event:
        case SessionStart(): ...
        ...
        case _: assert_never(event)

``WARNING`` is not in the §2.9 list but §5.5 emits it for context usage; it is kept
apart from ``ERROR`` so a host can tell "informational" from "something failed".
``RETRY`` (issue 23) says a model call is being asked again after a transient failure.
``BUDGET`` (issue 36) reports what a run with limits has used, and which limit stopped it;
``CONTEXT_COMPACTED`` (issue 36) says what was shortened to fit the context window.
``APPROVAL_PENDING`` and ``APPROVAL_DECIDED`` (issue 34) say that a call waits in the pending
store and how it was answered (or withdrawn), by whom and why: the session log keeps them.
"""

from __future__ import annotations

import dataclasses
import time
import typing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar


class EventKind(StrEnum):
    """The kinds of §2.9 (plus ``WARNING`` of §5.5); the value is the wire ``kind``."""

    SESSION_START = "session_start"
    SESSION_END = "session_end"
    USER_INPUT = "user_input"
    ASSISTANT_TEXT_START = "assistant_text_start"
    ASSISTANT_TEXT_DELTA = "assistant_text_delta"
    ASSISTANT_TEXT_END = "assistant_text_end"
    TOOL_CALL_START = "tool_call_start"
    TOOL_CALL_OUTPUT_DELTA = "tool_call_output_delta"
    TOOL_CALL_END = "tool_call_end"
    APPROVAL_PENDING = "approval_pending"
    APPROVAL_DECIDED = "approval_decided"
    STEERING_INJECTED = "steering_injected"
    TURN_LIMIT = "turn_limit"
    LOOP_DETECTION = "loop_detection"
    WARNING = "warning"
    ERROR = "error"
    RETRY = "retry"
    BUDGET = "budget"
    CONTEXT_COMPACTED = "context_compacted"
    CHECKPOINT = "checkpoint"


@dataclass(frozen=True, kw_only=True)
class _Event:
    kind: ClassVar[EventKind]
    session_id: str
    """The id of the session that emitted the event (a subagent has its own)."""
    timestamp: float = field(default_factory=time.time)
    """Seconds since the epoch when the event was created."""

    def __init_subclass__(cls, *, kind: EventKind) -> None:
        super().__init_subclass__()
        cls.kind = kind


@dataclass(frozen=True, kw_only=True)
class SessionStart(_Event, kind=EventKind.SESSION_START):
    """The session was created (first event of every session)."""

    profile: str
    """Profile id: ``openai``, ``anthropic``, ``gemini`` or ``text``."""
    model: str
    """Model identifier sent to the provider."""
    working_directory: str
    """Absolute workspace root."""


@dataclass(frozen=True, kw_only=True)
class SessionEnd(_Event, kind=EventKind.SESSION_END):
    """Processing of an input ended (state ``idle``/``awaiting_input``) or the session
    closed (state ``closed``); the last event of a session has state ``closed``."""

    state: str
    """The session state after this event: ``idle``, ``awaiting_input`` or ``closed``."""
    reason: str
    """Why: ``completed``, ``turn_limit``, ``round_limit``, ``loop_limit`` (a small model's loop
    went on after two warnings), ``budget`` (a cost, token or time limit paused the input: a
    ``budget`` event says which), ``aborted``, ``error``, ``closed``."""
    final_text: str = ""
    """The last assistant text of the input (the answer); for a small model whose last reply
    was empty or an echo, or that was stopped, a report of what the input's calls did."""


@dataclass(frozen=True, kw_only=True)
class UserInput(_Event, kind=EventKind.USER_INPUT):
    """The user submitted input (``submit``/``follow_up``)."""

    content: str


@dataclass(frozen=True, kw_only=True)
class AssistantTextStart(_Event, kind=EventKind.ASSISTANT_TEXT_START):
    """The model began a reply."""


@dataclass(frozen=True, kw_only=True)
class AssistantTextDelta(_Event, kind=EventKind.ASSISTANT_TEXT_DELTA):
    """Incremental text of the reply being streamed."""

    delta: str


@dataclass(frozen=True, kw_only=True)
class AssistantTextEnd(_Event, kind=EventKind.ASSISTANT_TEXT_END):
    """The model finished a reply; carries the whole text and the usage of the call."""

    text: str
    """Full reply text (for the ``text`` profile, including tool-call markup)."""
    reasoning: str | None = None
    """Reasoning/thinking text when the provider exposes it."""
    tool_call_count: int = 0
    """How many tool calls the reply holds (structured or recovered from text)."""
    input_tokens: int = 0
    """Prompt tokens of this call as reported by the provider."""
    output_tokens: int = 0
    """Generated tokens of this call."""
    cache_read_tokens: int = 0
    """Prompt tokens served from the provider's cache."""


@dataclass(frozen=True, kw_only=True)
class ToolCallStart(_Event, kind=EventKind.TOOL_CALL_START):
    """A tool call is about to run."""

    tool_name: str
    """Name the model called."""
    call_id: str
    """The call id linking start, deltas, end and the tool result."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Parsed arguments (empty when they could not be parsed)."""


@dataclass(frozen=True, kw_only=True)
class ToolCallOutputDelta(_Event, kind=EventKind.TOOL_CALL_OUTPUT_DELTA):
    """A chunk of output of a running tool (streaming tools such as ``shell``)."""

    call_id: str
    delta: str


@dataclass(frozen=True, kw_only=True)
class ToolCallEnd(_Event, kind=EventKind.TOOL_CALL_END):
    """A tool call finished; ``output`` is the FULL untruncated output (§2.9)."""

    call_id: str
    tool_name: str
    output: str | None = None
    """Full untruncated output on success (the model got the truncated one)."""
    error: str | None = None
    """Error text when the call failed (what the model was told)."""
    duration_ms: int = 0
    """Wall-clock duration of the call."""

    @property
    def is_error(self) -> bool:
        """True when the call failed."""
        return self.error is not None


@dataclass(frozen=True, kw_only=True)
class ApprovalPending(_Event, kind=EventKind.APPROVAL_PENDING):
    """A call waits for an answer in the pending store (``codeloop approvals approve ID``)."""

    call_id: str
    """The tool call that waits."""
    pending_id: str
    """Its id in the store: what an answer names."""
    tool_name: str
    summary: str
    """What runs: the command line, or the tool and its arguments."""
    reason: str
    """Why it asks."""
    grants: list[str] = field(default_factory=lambda: ["once"])
    """What an answer may grant: ``once``, and ``always`` when something can be remembered."""
    remember_as: list[str] = field(default_factory=list)
    """What an "always" answer stores."""


@dataclass(frozen=True, kw_only=True)
class ApprovalDecided(_Event, kind=EventKind.APPROVAL_DECIDED):
    """A waiting call was answered or withdrawn."""

    call_id: str
    pending_id: str
    tool_name: str
    status: str
    """``approved``, ``denied`` or ``withdrawn``."""
    decided_by: str
    """Who answered (``terminal``, the user of ``codeloop approvals``), ``codeloop`` for a withdrawal."""
    reason: str = ""
    """Why, as they said."""
    scope: str | None = None
    """``once`` or ``always`` for an approval."""


@dataclass(frozen=True, kw_only=True)
class SteeringInjected(_Event, kind=EventKind.STEERING_INJECTED):
    """A steering message (or loop warning) was added to the history."""

    content: str
    """The message as the model will see it."""


@dataclass(frozen=True, kw_only=True)
class TurnLimit(_Event, kind=EventKind.TURN_LIMIT):
    """A limit stopped the loop: ``round`` for ``max_tool_rounds_per_input``,
    ``total_turns`` for ``max_turns``."""

    round: int | None = None
    """Tool rounds done for this input, when the round limit hit."""
    total_turns: int | None = None
    """Turns in the session, when the session turn limit hit."""


@dataclass(frozen=True, kw_only=True)
class LoopDetection(_Event, kind=EventKind.LOOP_DETECTION):
    """The last tool calls repeat a pattern (§2.10); ``message`` was injected as steering."""

    message: str
    """The warning text given to the model."""


@dataclass(frozen=True, kw_only=True)
class WarningEvent(_Event, kind=EventKind.WARNING):
    """Something the host should know that does not stop the session (§5.5)."""

    message: str
    code: str = ""
    """Machine-readable code: ``context_usage``, ``context_length``, ``tool_recovery``, ``hook``
    (a hook failed or timed out, docs/hooks.md), ``diagnostics`` (a diagnostics command failed
    to run or timed out, docs/tools.md)..."""


@dataclass(frozen=True, kw_only=True)
class ErrorEvent(_Event, kind=EventKind.ERROR):
    """An error occurred; when ``fatal`` the session closes next."""

    message: str
    """Human-readable text naming what failed and how to fix it."""
    error_type: str
    """Class name of the underlying error (``AuthenticationError``...)."""
    fatal: bool = False
    """True when the session is closing because of this error."""


@dataclass(frozen=True, kw_only=True)
class Retry(_Event, kind=EventKind.RETRY):
    """A model call failed transiently and is asked again after ``wait`` seconds (issue 23)."""

    attempt: int
    max_retries: int
    """How many retries a model call may use."""
    wait: float
    """Seconds until the retry (the provider's Retry-After when it sent one)."""
    cause: str
    """A few words: ``rate limited``, ``server error (HTTP 503)``, ``connection failed``..."""
    error_type: str
    message: str
    discard_deltas: bool = False
    """True when text of this call was already streamed: the retry starts the reply over."""


@dataclass(frozen=True, kw_only=True)
class BudgetEvent(_Event, kind=EventKind.BUDGET):
    """What a run with limits has used (issue 36): after each model call, at the end of each
    input, and when a limit stops the input (``limit`` names it; the session is paused: it
    goes on with a higher limit, ``codeloop run --resume ID --max-cost ...``)."""

    limit: str | None = None
    """The limit that stopped the input: ``cost``, ``tokens``, ``time`` or ``turns``; None in a report."""
    used: dict[str, Any] = field(default_factory=dict)
    """``cost_usd`` (list price), ``tokens`` (input + output), ``seconds`` (processing), ``turns``;
    subagents' spending included."""
    limits: dict[str, Any] = field(default_factory=dict)
    """The same keys: the limits set (None: no limit)."""


@dataclass(frozen=True, kw_only=True)
class ContextCompacted(_Event, kind=EventKind.CONTEXT_COMPACTED):
    """The history was shortened to fit the context window (issue 36): which tool outputs
    were replaced by a note, and the estimated tokens before and after. A dropped output is
    kept and the model can read it back with ``recall_output``. codeloop does not write
    summaries (``summary`` is set only when a summary replaces turns, as codali's shared
    history does); the system prompt, AGENTS.md and the user's inputs are never dropped."""

    reason: str = "context_window"
    """Why: ``context_window`` (the history passed 70 % of the window)."""
    tokens_before: int = 0
    """Estimated tokens of the request before (characters / 4, the §5.5 estimate)."""
    tokens_after: int = 0
    """Estimated tokens after."""
    dropped: list[dict[str, Any]] = field(default_factory=list)
    """One per output replaced: ``turn`` (index in the history), ``call_id``, ``tool_name``, ``chars``."""
    summary: str | None = None
    """The summary that replaced turns, when one did (codeloop's loop writes none)."""


@dataclass(frozen=True, kw_only=True)
class CheckpointEvent(_Event, kind=EventKind.CHECKPOINT):
    """A call that may change files finished and the workspace was snapshotted (issue 35):
    ``codeloop rewind``/``undo`` can put it back as it was before this call."""

    step: int | str | None = None
    """The turn (the face's unit of work) the call belongs to."""
    call_id: str | None = None
    tool_name: str = ""
    snapshot: str = ""
    """The snapshot after the call (a tree id in codeloop's snapshot repository)."""
    paths: list[str] = field(default_factory=list)
    """Workspace paths the call changed (created, deleted, modified, mode)."""


SessionEvent = (
    SessionStart
    | SessionEnd
    | UserInput
    | AssistantTextStart
    | AssistantTextDelta
    | AssistantTextEnd
    | ToolCallStart
    | ToolCallOutputDelta
    | ToolCallEnd
    | ApprovalPending
    | ApprovalDecided
    | SteeringInjected
    | TurnLimit
    | LoopDetection
    | WarningEvent
    | ErrorEvent
    | Retry
    | BudgetEvent
    | ContextCompacted
    | CheckpointEvent
)
"""The closed union of every event a session emits."""

EVENT_TYPES: dict[EventKind, type[_Event]] = {cls.kind: cls for cls in typing.get_args(SessionEvent)}
"""Kind → dataclass, one entry per kind (checked by the tests)."""

_ENVELOPE = frozenset({"session_id", "timestamp"})


def event_to_json(event: SessionEvent) -> dict[str, Any]:
    """The wire form ``{kind, timestamp, session_id, data}``; ``timestamp`` is ISO 8601 UTC."""
    data = {f.name: getattr(event, f.name) for f in dataclasses.fields(event) if f.name not in _ENVELOPE}
    return {
        "kind": event.kind.value,
        "timestamp": datetime.fromtimestamp(event.timestamp, UTC).isoformat(timespec="milliseconds"),
        "session_id": event.session_id,
        "data": data,
    }
