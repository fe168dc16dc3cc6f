"""Limits of a relay session on steps and time (issue 36).

``codeloop relay new --max-steps N --max-time DURATION`` stores them in the session file
(``limits``); ``codeloop relay limits`` changes them later. A *step* is one reply applied
(so the steps used are ``sequenceNumber - 1``); the *time* is the wall time the session's
commands took (the person's copy-and-paste time does not count).

Checks, so a session never goes one over:

- before a reply is taken: when a limit is reached, pending replies are set aside in
  ``inbox/rejected/`` with a note instead of being applied;
- before each command: once the time is used up, the rest of the reply's commands do not
  run (each says so in the next outbox), and a RUN_COMMAND's timeout is cut to the time
  left (it is stopped with its process group when that passes).

The outbox written when a limit is reached says so in plain words in its PROMPT section.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from codeloop.relay.results import CommandResult

if TYPE_CHECKING:
    from codeloop.relay.session import SessionState

Limit = Literal["steps", "time"]


@dataclass(frozen=True)
class SessionLimits:
    """A session's limits and the time its commands used; ``None`` is no limit."""

    max_steps: int | None = None
    """Replies that may be applied."""
    max_time_s: float | None = None
    """Seconds the session's commands may take, all together."""
    command_s: float = 0.0
    """Seconds the session's commands took so far."""

    def to_json(self) -> dict[str, Any]:
        return {"maxSteps": self.max_steps, "maxTimeSeconds": self.max_time_s,
                "commandSeconds": round(self.command_s, 3)}

    @classmethod
    def from_json(cls, data: object) -> SessionLimits:
        """Read the session-file form; raise ``ValueError`` naming the bad field."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ValueError("field limits must be an object")
        steps, time_s, used = data.get("maxSteps"), data.get("maxTimeSeconds"), data.get("commandSeconds", 0)
        if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 1):
            raise ValueError("field limits.maxSteps must be a whole number of at least 1, or null")
        if time_s is not None and (not _number(time_s) or time_s <= 0):
            raise ValueError("field limits.maxTimeSeconds must be a number above 0, or null")
        if not _number(used) or used < 0:
            raise ValueError("field limits.commandSeconds must be a number of at least 0")
        return cls(steps, None if time_s is None else float(time_s), float(used))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value  # not NaN


def steps_used(state: SessionState) -> int:
    """Replies applied so far."""
    return state.sequence_number - 1


def reached(state: SessionState) -> Limit | None:
    """The limit that forbids applying another reply, if any."""
    limits = state.limits
    if limits.max_steps is not None and steps_used(state) >= limits.max_steps:
        return "steps"
    if limits.max_time_s is not None and limits.command_s >= limits.max_time_s:
        return "time"
    return None


def time_left_ms(state: SessionState) -> int | None:
    """Milliseconds the session's commands may still take (``None``: no time limit)."""
    if state.limits.max_time_s is None:
        return None
    return max(int((state.limits.max_time_s - state.limits.command_s) * 1000), 0)


def spent(state: SessionState, seconds: float) -> SessionState:
    """``state`` with ``seconds`` more of command time."""
    return replace(state, limits=replace(state.limits, command_s=state.limits.command_s + seconds))


def _what(state: SessionState, limit: Limit) -> str:
    limits = state.limits
    if limit == "steps":
        return (f"its limit on replies (--max-steps {limits.max_steps}) is used up: {steps_used(state)} applied "
                "(raise it with: codeloop relay limits --max-steps N)")
    return (f"its limit on command time (--max-time {limits.max_time_s:g}s) is used up: the commands took "
            f"{limits.command_s:.1f} s (raise it with: codeloop relay limits --max-time DURATION)")


def notice(state: SessionState) -> str | None:
    """The plain-words PROMPT of an outbox written when a limit is reached, else ``None``."""
    limit = reached(state)
    if limit is None:
        return None
    return (f"LIMIT REACHED: this relay session stops here, because {_what(state, limit)}.\n"
            "The results above are the last ones. codeloop will not apply another reply until the "
            "person relaying raises the limit; a reply sent before that is set aside unread. Once the "
            "limit is raised, this message is written again without this notice, and you go on from it.")


def set_aside_reason(state: SessionState) -> tuple[str, str]:
    """Why a reply is set aside at a limit, and what to do (for its ``.note``)."""
    limit = reached(state)
    assert limit is not None
    return (f"session {state.session_id} stopped: {_what(state, limit)}",
            "Once the limit is raised, paste the newest outbox to the model again (it is written anew "
            "without the limit notice) and save its new reply into the inbox.")


def not_run(name: str) -> CommandResult:
    """The result of a command that did not run because the session's time was used up."""
    return CommandResult(name, False, "Not run: the session's time limit (--max-time) was used up before it "
                                      "could start")
