"""Turn guard: loop detection (loop spec §2.10): the last N tool calls repeat a pattern of 1, 2 or 3.

With the small-model rescues on (issue 20), a loop that goes on after two warnings ends the
input (reason ``loop_limit``) with a report of what its calls did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, end, nudge, rescues_on
from codeloop.agent.guards.work_report import describe_work
from codeloop.agent.history import CallResult
from codeloop.llm.types import ToolCall

if TYPE_CHECKING:
    from codeloop.agent.guards.base import SessionView


MAX_LOOP_WARNINGS = 2
"""Loop warnings per input a small model may ignore; the next loop ends the input."""
LOOP_STOPPED = "stopped: the model repeated the same calls after two warnings"
"""The note of the input's end (a WARNING event with code ``loop_limit``)."""


def loop_warning(window: int) -> str:
    """The warning injected as a SteeringTurn, verbatim from §2.5."""
    return (
        "Loop detected: the last " + str(window)
        + " tool calls follow a repeating pattern. Try a different approach."
    )


def detect_loop(recent_calls: Sequence[str], window_size: int) -> bool:
    """True when the last ``window_size`` signatures are one pattern of length 1, 2 or 3
    repeated; fewer calls than the window never count as a loop."""
    if window_size <= 0 or len(recent_calls) < window_size:
        return False
    calls = list(recent_calls[-window_size:])
    for pattern_len in (1, 2, 3):
        if window_size % pattern_len != 0:
            continue
        pattern = calls[:pattern_len]
        if all(calls[i:i + pattern_len] == pattern for i in range(pattern_len, window_size, pattern_len)):
            return True
    return False


class LoopWarning(TurnGuard):
    """Warns; with the small-model rescues on, a third loop in one input (two warnings
    ignored) ends the input instead of burning the rest of the time (issue 20)."""

    def __init__(self) -> None:
        self.warnings = 0

    def applies(self, session: SessionView) -> bool:
        return session.config.enable_loop_detection

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        session = turn.session
        window = session.config.loop_detection_window
        if not detect_loop(session.history.recent_call_signatures(window), window):
            return ACCEPT
        if self.warnings >= MAX_LOOP_WARNINGS and rescues_on(session):
            turn.answer = f"{LOOP_STOPPED[0].upper()}{LOOP_STOPPED[1:]}. " + describe_work(session)
            return end("loop_limit", LOOP_STOPPED)
        self.warnings += 1
        return nudge(loop_warning(window), event="loop_detection")
