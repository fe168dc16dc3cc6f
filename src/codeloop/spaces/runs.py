"""Run one operations message to completion (or to an approval pause) without a server.

Used by ``codeloop spaces exec`` and by tests; the HTTP service persists the same steps. An
operation that asks waits as a pending call in a store (default: the user's approvals store,
``$CODELOOP_STATE_DIR/approvals.sqlite3``, issue 34); the caller answers it by calling again
with the same ``run_id`` and an :class:`~codeloop.spaces.operations.Approval`, which is
decided through that store like any other answer.
"""

from __future__ import annotations

import secrets
from typing import Any

from pydantic import BaseModel

from codeloop.environments.base import ExecutionEnvironment
from codeloop.policy import Policy
from codeloop.policy.input_limits import InputLimitError, check_encodable
from codeloop.policy.pending import PendingStore, SqlitePendingStore
from codeloop.sessions.state_dir import approvals_db_path
from codeloop.spaces.engine import ApprovalMismatchError, RunOutcome, execute_run, operation_id
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
                      run_time_ms: float = 0.0, pending: PendingStore | None = None,
                      who: str = "the caller of run_message") -> tuple[EventsMessage, RunOutcome]:
    """Execute ``raw`` from ``start`` and return the events of this call and where it stopped.

    ``approval`` answers, as ``who``, the pending call the operation at ``start`` of run
    ``run_id`` waits for in ``pending`` (:class:`ApprovalMismatchError` when it waits for none:
    another operation, another run). An answer given before (through the store) stands."""
    operations = parse_message(raw)
    run_id = run_id or new_run_id()
    store = pending if pending is not None else SqlitePendingStore(approvals_db_path())
    answered = None if approval is None else _answer(store, run_id, operations, start, approval, who)
    events: list[BaseModel] = []

    async def emit(event: BaseModel, _cursor: int) -> None:
        events.append(event)

    outcome = await execute_run(operations, env, policy, emit, pending=store, run_id=run_id, start=start,
                                answered=answered, limits=limits, run_time_ms=run_time_ms)
    message = EventsMessage(runId=run_id, events=events,  # type: ignore[arg-type]
                            status=wire_status(outcome))
    return message, outcome


def _answer(store: PendingStore, run_id: str, operations: list[Any], start: int, approval: Approval,
            who: str) -> str:
    """Decide the entry the operation at ``start`` waits for; its id."""
    waiting = operation_id(operations[start], start) if start < len(operations) else None
    asked = [e for e in store.list(session=run_id, status=None) if e.step == approval.operationId]
    if approval.operationId != waiting or not asked:
        raise ApprovalMismatchError(f"operation {approval.operationId!r} is not the one awaiting approval in run "
                                    f"{run_id}")
    entry = asked[-1]
    store.decide(entry.id, "approve" if approval.decision == "approved" else "deny", who, approval.reason or "")
    return entry.id
