"""Run one operations message to completion (or to an approval pause) without a server.

Used by ``codeloop spaces exec`` and by tests; the HTTP service persists the same steps.
"""

from __future__ import annotations

import secrets
from typing import Any

from pydantic import BaseModel

from codeloop.environments.base import ExecutionEnvironment
from codeloop.policy import Policy
from codeloop.policy.input_limits import InputLimitError, check_encodable
from codeloop.spaces.engine import RunOutcome, execute_run
from codeloop.spaces.limits import NO_LIMITS, RunLimits
from codeloop.spaces.operations import Approval, EventsMessage, RunStatus, envelope_problems, split_operations


class MessageRejectedError(ValueError):
    """Raised when the message around the operations is malformed (nothing was run)."""


def new_run_id() -> str:
    """A fresh run id (``run_`` + 16 hex digits)."""
    return "run_" + secrets.token_hex(8)


def wire_status(outcome: RunOutcome) -> RunStatus:
    """The protocol status of an outcome (a cancelled run, or one stopped by a limit, reports ``error``)."""
    match outcome.state:
        case "cancelled" | "limit_reached":
            return "error"
        case state:
            return state


def parse_message(raw: object) -> list[Any]:
    """The operations of ``raw`` (models or ``InvalidOperation``); raise :class:`MessageRejectedError`."""
    problems = envelope_problems(raw)
    if problems:
        raise MessageRejectedError("; ".join(problems))
    try:  # before anything runs: such text would be written as invalid UTF-8, or fail halfway
        check_encodable(raw, "operations message")
    except InputLimitError as exc:
        raise MessageRejectedError(str(exc)) from None
    assert isinstance(raw, dict)
    return split_operations(raw)


async def run_message(raw: object, env: ExecutionEnvironment, policy: Policy, *, run_id: str | None = None,
                      start: int = 0, approval: Approval | None = None, limits: RunLimits = NO_LIMITS,
                      run_time_ms: float = 0.0) -> tuple[EventsMessage, RunOutcome]:
    """Execute ``raw`` from ``start`` and return the events of this call and where it stopped."""
    operations = parse_message(raw)
    events: list[BaseModel] = []

    async def emit(event: BaseModel, _cursor: int) -> None:
        events.append(event)

    outcome = await execute_run(operations, env, policy, emit, start=start, approval=approval, limits=limits,
                                run_time_ms=run_time_ms)
    message = EventsMessage(runId=run_id or new_run_id(), events=events,  # type: ignore[arg-type]
                            status=wire_status(outcome))
    return message, outcome
