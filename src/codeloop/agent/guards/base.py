"""The turn-guard seam (issue 18): small checks the loop runs after each reply and tool round.

Small-model rescues (an empty reply nudged, a claim no call backs, a loop warned about) are
not spelled out in the loop: each is a :class:`TurnGuard` in its own module, listed in
:data:`codeloop.agent.guards.DEFAULT_GUARDS`. The session makes fresh guards per input (a
guard may count within an input). ``after_reply``: the first guard that does not accept
decides (``nudge``: its text goes to the model as steering and the model is asked again;
``end``: the input ends with that reason); later guards do not see the reply.
``after_tools``: every guard sees every tool round; nudges are all sent, an ``end`` ends the input.
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
    """A guard's answer: :data:`ACCEPT`, :func:`nudge` or :func:`end`."""

    kind: Literal["accept", "nudge", "end"]
    text: str = ""
    """The nudge's message to the model, or the reason the input ends."""
    event: Literal["steering", "loop_detection"] = "steering"
    """How a nudge is reported: ``STEERING_INJECTED``, or ``LOOP_DETECTION`` (§2.10)."""


ACCEPT = GuardAction("accept")


def nudge(text: str, *, event: Literal["steering", "loop_detection"] = "steering") -> GuardAction:
    return GuardAction("nudge", text, event)


def end(reason: str) -> GuardAction:
    return GuardAction("end", reason)


@dataclass
class Turn:
    """The input being processed, as guards see it."""

    session: Session
    rounds: int = 0
    """Tool rounds run for this input so far."""


class TurnGuard:
    """Accepts everything; a guard overrides the hooks it needs. Must not raise."""

    def applies(self, session: Session) -> bool:
        """False when the guard has nothing to do in ``session`` (its hooks are then not called)."""
        return True

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        return ACCEPT

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        return ACCEPT
