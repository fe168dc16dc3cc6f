"""The turn-guard seam (issue 18): small checks the loop runs after each reply and tool round.

Small models need rescues (an empty reply nudged, a claim no call backs, a loop warned
about) that the loop itself should not spell out. Each is a :class:`TurnGuard` in its own
module, listed in :data:`codeloop.agent.guards.DEFAULT_GUARDS`; the session makes a fresh
instance of each per input, so a guard may count within an input.

- ``after_reply``: the first guard that does not accept decides. ``nudge`` sends its text
  to the model as steering and calls the model again; ``end`` ends the input with its
  reason. Later guards do not see that reply.
- ``after_tools``: every guard sees every tool round; each nudge is sent, an ``end`` ends
  the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from codeloop.agent.history import CallResult
    from codeloop.agent.reply_reader import Reply
    from codeloop.agent.session import Session
    from codeloop.llm.types import ToolCall


@dataclass(frozen=True)
class GuardAction:
    """A guard's answer; build with :data:`ACCEPT`, :func:`nudge` or :func:`end`."""

    kind: Literal["accept", "nudge", "end"]
    text: str = ""
    """The nudge's message to the model, or the reason the input ends."""
    event: Literal["steering", "loop_detection"] = "steering"
    """How a nudge is reported: ``STEERING_INJECTED``, or ``LOOP_DETECTION`` (§2.10)."""


ACCEPT = GuardAction("accept")


def nudge(text: str, *, event: Literal["steering", "loop_detection"] = "steering") -> GuardAction:
    """Send ``text`` to the model (a steering turn) before it goes on."""
    return GuardAction("nudge", text, event)


def end(reason: str) -> GuardAction:
    """End the input now; ``reason`` becomes the ``SESSION_END`` reason."""
    return GuardAction("end", reason)


@dataclass
class Turn:
    """The input being processed, as guards see it."""

    session: Session
    rounds: int = 0
    """Tool rounds run for this input so far."""


class TurnGuard:
    """Accepts everything; a guard overrides the hooks it needs. Must not raise."""

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        """Called with each reply before its calls run (or before it ends the input)."""
        return ACCEPT

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        """Called after each tool round, once its results are in the history."""
        return ACCEPT
