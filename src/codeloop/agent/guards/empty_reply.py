"""Turn guard: an empty reply to a tool result is not a final answer (issue 10).

Small models sometimes answer a tool result with nothing (often they start to write the
result themselves and hit a stop sequence); they are asked to go on, at most twice per input.
"""

from __future__ import annotations

from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, nudge
from codeloop.agent.reply_reader import Reply

EMPTY_REPLY = "Your reply was empty. Continue the task: call a tool, or give your final answer."
"""Sent when the model answers a tool result with nothing."""
MAX_EMPTY_REPLIES = 2
"""Empty replies per input answered with EMPTY_REPLY; the next one ends the input."""


class EmptyReplyNudge(TurnGuard):
    def __init__(self) -> None:
        self.nudged = 0

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        # turn.echo: the small-model echo guard judged this reply already (and gave up on it).
        if reply.calls or reply.text.strip() or not turn.rounds or turn.echo or self.nudged >= MAX_EMPTY_REPLIES:
            return ACCEPT
        self.nudged += 1
        return nudge(EMPTY_REPLY)
