"""Turn guard: loop detection (loop spec §2.10): the last N tool calls repeat a pattern of 1, 2 or 3."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, nudge
from codeloop.agent.history import CallResult
from codeloop.llm.types import ToolCall

if TYPE_CHECKING:
    from codeloop.agent.session import Session


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
    def applies(self, session: Session) -> bool:
        return session.config.enable_loop_detection

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        window = turn.session.config.loop_detection_window
        if detect_loop(turn.session.history.recent_call_signatures(window), window):
            return nudge(loop_warning(window), event="loop_detection")
        return ACCEPT
