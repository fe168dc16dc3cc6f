"""The turn-guard seam (issue 18): small checks the loop runs around each input, reply and tool call.

Small-model rescues (an empty reply nudged, a claim no call backs, a loop warned about) are
not spelled out in the loop: each is a :class:`TurnGuard` in its own module, listed in
:data:`codeloop.agent.guards.DEFAULT_GUARDS`. The session makes fresh guards per input (a
guard may count within an input). ``before_input``: text added to the input before the
first request (files the task names). ``before_call``: asked in the tool pipeline's ANSWER
step, after POLICY; an output answers the call without running it (a repeated read).
``after_reply``: the first guard that does not accept decides (``nudge``: its text goes to
the model as steering and the model is asked again; ``end``: the input ends with that
reason); later guards do not see the reply. ``after_tools``: every guard sees every tool
round; nudges are all sent, an ``end`` ends the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from codeloop.agent.config import SessionConfig
    from codeloop.agent.history import CallResult, History
    from codeloop.agent.reply_reader import Reply
    from codeloop.environments.base import ExecutionEnvironment
    from codeloop.llm.types import ToolCall
    from codeloop.policy.approval import ToolCallRequest
    from codeloop.profiles.base import ProviderProfile
    from codeloop.tools.registry import ToolOutput


class SessionView(Protocol):
    """What a guard sees of the session running it: a narrow, read-only view (issue 33), so
    that the guards never import the Session (the ``agent-acyclic`` import contract)."""

    @property
    def id(self) -> str: ...

    @property
    def history(self) -> History: ...

    @property
    def environment(self) -> ExecutionEnvironment: ...

    @property
    def profile(self) -> ProviderProfile: ...

    @property
    def config(self) -> SessionConfig: ...

    @property
    def small_model(self) -> bool: ...

    @property
    def constrained(self) -> bool: ...

    @property
    def system_prompt(self) -> str: ...

    @property
    def fixed_prompt(self) -> str | None: ...


@dataclass(frozen=True)
class GuardAction:
    """A guard's answer: :data:`ACCEPT`, :func:`nudge`, :func:`end` or :func:`run_instead`."""

    kind: Literal["accept", "nudge", "end", "call"]
    text: str = ""
    """The nudge's message to the model, the reason the input ends, or for a call that replaces
    a reply's calls, the reply's text in the history."""
    event: Literal["steering", "loop_detection"] = "steering"
    """How a nudge is reported: ``STEERING_INJECTED``, or ``LOOP_DETECTION`` (§2.10)."""
    note: str = ""
    """For an end: told to the user as a WARNING event whose code is the reason; for a call,
    why codeloop makes it (a WARNING event with code ``verify``)."""
    call: ToolCall | None = None
    """For a call: the call that completes the model's reply, run through the pipeline."""


ACCEPT = GuardAction("accept")


def nudge(text: str, *, event: Literal["steering", "loop_detection"] = "steering") -> GuardAction:
    return GuardAction("nudge", text, event)


def end(reason: str, note: str = "") -> GuardAction:
    return GuardAction("end", reason, note=note)


def run_instead(call: ToolCall, note: str, written: str = "") -> GuardAction:
    """Complete the model's final reply with ``call``, or replace the calls of a reply that had
    some (its text in the history then becomes ``written``: the call as the model would write
    it, so it does not see calls that never ran): it runs as any call of the model would
    (policy, approval, events), and the model answers again after its result."""
    return GuardAction("call", written, note=note, call=call)


@dataclass(frozen=True)
class Shown:
    """Lines of a file the model has in front of it this input (a read's result, or the
    task's files put before it), and the version they came from."""

    first: int
    last: int
    """1-based lines shown (``last`` < ``first``: an empty file)."""
    digest: str
    """Fingerprint of the file's bytes then (:func:`codeloop.tools.workspace_ops.fingerprint`)."""
    step: int
    """The tool round of the read; 0: put in front of the task."""
    call_id: str | None = None
    """The read's call, whose result must still be whole in the history to count."""


@dataclass
class Turn:
    """The input being processed, as guards see it."""

    session: SessionView
    rounds: int = 0
    """Tool rounds run for this input so far."""
    task: str = ""
    """The input as given (before any guard added to it)."""
    shown: dict[str, list[Shown]] = field(default_factory=dict)
    """Per workspace-relative path, what the model has been shown of it this input."""
    answer: str | None = None
    """Set by a guard: the answer to report instead of the model's last text when the input
    ends (its final text was empty or an echo; it was stopped), derived from the calls."""
    echo: bool = False
    """Set by the echo guard for the reply being judged: it was empty or repeated what the
    model was sent, so it is no answer of the model's own."""


def rescues_on(session: SessionView) -> bool:
    """Whether the small-model rescues apply (:attr:`Session.small_model`)."""
    return session.small_model


class TurnGuard:
    """Accepts everything; a guard overrides the hooks it needs. Must not raise."""

    def applies(self, session: SessionView) -> bool:
        """False when the guard has nothing to do in ``session`` (its hooks are then not called)."""
        return True

    async def before_input(self, turn: Turn) -> str:
        """Text to put in front of the input ``turn.task`` ("" for none)."""
        return ""

    async def before_call(self, call: ToolCallRequest, turn: Turn) -> ToolOutput | None:
        """An answer for ``call`` that replaces running it, or None to run it."""
        return None

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        return ACCEPT

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        return ACCEPT
