"""The turn-guard seam (issue 18): a new guard is one class and one list entry."""

from __future__ import annotations

from collections.abc import Sequence

from codeloop.agent import events as ev
from codeloop.agent.guards import DEFAULT_GUARDS, GuardAction, Turn, TurnGuard, end, nudge
from codeloop.agent.history import CallResult
from codeloop.agent.reply_reader import Reply
from codeloop.llm.adapters.scripted import text_response
from codeloop.llm.types import ToolCall

from .agent_harness import calls


class StopOnSorry(TurnGuard):
    """Ends the input when the model apologises instead of answering."""

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        return end("gave_up") if reply.text.startswith("Sorry") else await super().after_reply(reply, turn)


class CountRounds(TurnGuard):
    """Tells the model how many rounds ran, after each one (counts per input)."""

    def __init__(self) -> None:
        self.seen = 0

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        self.seen += 1
        return nudge(f"round {self.seen} of this input done ({turn.rounds} counted by the loop)")


async def test_a_guard_can_end_the_input_with_its_reason(harness) -> None:
    h = harness("anthropic", [text_response("Sorry, I cannot."), text_response("never asked")])
    h.session.guards = (*DEFAULT_GUARDS, StopOnSorry)
    assert await h.session.submit("x") == "Sorry, I cannot."
    assert h.session.end_reason == "gave_up" and h.of(ev.SessionEnd)[0].reason == "gave_up"
    assert len(h.adapter.requests) == 1


async def test_after_tools_nudges_reach_the_model_and_guards_are_fresh_per_input(harness) -> None:
    echo = ("shell", {"command": "echo hi"})
    h = harness("anthropic", [calls("anthropic", echo), text_response("one"),
                              calls("anthropic", echo), text_response("two")])
    h.session.guards = (CountRounds,)
    await h.session.submit("first")
    await h.session.submit("second")
    notes = [e.content for e in h.of(ev.SteeringInjected)]
    assert notes == ["round 1 of this input done (1 counted by the loop)"] * 2
    assert h.adapter.requests[1].messages[-1].text == notes[0]


class NeverApplies(CountRounds):
    """Would nudge after every round, but is off for every session."""

    def applies(self, session: object) -> bool:
        return False


async def test_a_guard_that_does_not_apply_to_the_session_is_never_called(harness) -> None:
    h = harness("anthropic", [calls("anthropic", ("shell", {"command": "true"})), text_response("done")])
    h.session.guards = (NeverApplies,)
    await h.session.submit("go")
    assert not h.of(ev.SteeringInjected) and h.session.end_reason == "completed"
    on = harness("anthropic", [calls("anthropic", ("shell", {"command": "true"})), text_response("done")])
    on.session.guards = (CountRounds,)
    await on.session.submit("go")
    assert [e.content for e in on.of(ev.SteeringInjected)] == ["round 1 of this input done (1 counted by the loop)"]
