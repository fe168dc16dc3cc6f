"""What the pipeline announces about a call: one frozen dataclass per kind, in a closed union.

The pipeline's EVENT step hands each to the face's :data:`ToolEventSink`; the face builds its
own wire form from them once (the agent's ``ToolCallStart``/``ToolCallEnd``/
``ToolCallOutputDelta`` session events, codali's ``tool_call`` lines). A sink matches every
kind and ends with ``assert_never``, so a new kind is a type error until each face says what
it does with it. Sinks must not raise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from codeloop.policy.pending import PendingCall


@dataclass(frozen=True)
class ToolCallStarted:
    """Before LOOKUP: a call is about to go through the pipeline."""

    tool_name: str
    """The name the caller gave (even when no such tool exists)."""
    call_id: str | None
    """The provider's id of the call, if any."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """The arguments as given when they were already an object; ``{}`` for a JSON string."""


@dataclass(frozen=True)
class ToolCallOutput:
    """While EXECUTE runs: a chunk of a command's output as it arrives."""

    call_id: str | None
    """The call the output belongs to."""
    stream: str
    """``stdout`` or ``stderr``."""
    text: str
    """The chunk (already redacted by the environment)."""


@dataclass(frozen=True)
class ToolCallEnded:
    """After TRUNCATE: how the call ended."""

    tool_name: str
    """The name the caller gave."""
    call_id: str | None
    """The provider's id of the call, if any."""
    output: str | None
    """The full (untruncated) text of a call that succeeded, else None."""
    error: str | None
    """The full text of a call that failed (unknown tool, bad arguments, denied, the tool's
    error), else None."""
    duration_ms: int
    """Time spent in the pipeline."""

    @property
    def is_error(self) -> bool:
        return self.error is not None


@dataclass(frozen=True)
class ToolCallPending:
    """After POLICY asked: the call waits in the pending store (``entry.id`` is what an answer names)."""

    call_id: str | None
    """The provider's id of the call, if any."""
    entry: PendingCall
    """The stored entry: what runs, why it asks, what may be granted."""


@dataclass(frozen=True)
class ToolCallDecided:
    """A pending call was answered or withdrawn: ``entry.status`` (approved, denied, withdrawn),
    ``decided_by`` and ``decision_reason`` say how, by whom and why."""

    call_id: str | None
    """The provider's id of the call, if any."""
    entry: PendingCall
    """The entry as decided."""


ToolEvent = ToolCallStarted | ToolCallPending | ToolCallDecided | ToolCallOutput | ToolCallEnded
"""Every kind the pipeline emits, in lifecycle order."""

ToolEventSink = Callable[[ToolEvent], None]
"""The face's EVENT step; must not raise."""
