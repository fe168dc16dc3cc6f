"""Turn guard: a final answer that claims file changes no call made (issue 10, :mod:`codeloop.agent.claims`).

A small model's "I have created result.txt" with no call behind it would end the task with
a false report; checked once per input (``SessionConfig.check_claims``), one reminder
usually gets the call made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeloop.agent.claims import claim_note, unbacked
from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, nudge
from codeloop.agent.history import CallResult
from codeloop.agent.reply_reader import Reply
from codeloop.llm.types import ToolCall

if TYPE_CHECKING:
    from codeloop.agent.session import Session


class ClaimCheck(TurnGuard):
    def __init__(self) -> None:
        self.checked = False
        self.touched: list[str] = []
        """Arguments of this input's successful calls that can change files (they back claims)."""

    def applies(self, session: Session) -> bool:
        check = session.config.check_claims
        return session.profile.compact if check is None else check

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        if reply.calls or self.checked:
            return ACCEPT
        self.checked = True
        found = await unbacked(reply.text, self.touched, turn.session.environment.file_exists)
        return nudge(claim_note(found)) if found else ACCEPT

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        registry = turn.session.profile.tool_registry
        self.touched += [str(call.arguments) for call, result in zip(calls, results, strict=True)
                         if not result.is_error and not registry.request(call.name, dict(call.arguments)).read_only]
        return ACCEPT
