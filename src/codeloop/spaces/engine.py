"""Execute the operations of a run, one event per operation (spaces protocol §Execution Semantics).

Contract of :func:`execute_run`:

- operations run strictly in list order; each produces exactly one event, appended through
  ``emit`` before the next operation starts;
- a failing operation does not stop the run; an invalid operation yields an ``error`` event
  (category ``validation``) and is skipped; a policy ``deny`` yields ``policyDenied``;
- a policy ``ask`` adds a pending call to the run's store (``pending``, session = the run's
  id, step = the operation's id; issue 34), yields ``approvalRequired`` and pauses: the
  outcome is ``awaiting_approval`` with ``cursor`` on that operation. Once the store has an
  answer, calling again with ``answered`` (the entry's id) runs it once after its claim
  (approved) or emits ``policyDenied`` (denied or withdrawn), then continues. Nothing here
  decides or remembers an answer: the store does;
- an unexpected failure of the runtime itself yields an ``error`` event (category
  ``system``) and ends the run with status ``error``;
- ``started`` is awaited with an operation's index just before it executes (issue 40: the
  replica records the start under its lease; raising there stops the run before the operation);
- with :class:`~codeloop.spaces.limits.RunLimits`, the limits are checked before each
  operation starts and an operation still running when ``maxRunTime`` passes is cancelled;
  either stop is an ``error`` event with ``details.code`` ``budgetExceeded`` and the outcome
  ``limit_reached`` (see :mod:`codeloop.spaces.limits`).

Each file operation and command is a call of the space's pipeline
(:func:`codeloop.tools.space_tools.space_pipeline`: policy, pending store, execution), whose
tools run the workspace operations with the policy's limits; this module only turns the
typed outcomes into the protocol's events and texts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.policy import Decision, Policy
from codeloop.policy.approval import Effect
from codeloop.policy.pending import PendingCall, PendingStore
from codeloop.spaces import operations as wire
from codeloop.spaces.limits import LIMIT_REACHED, NO_LIMITS, RunLimits, budget_event, exceeded
from codeloop.tools import outcomes as ops
from codeloop.tools.call_path import Pipeline, PipelineCall
from codeloop.tools.errors import ToolError
from codeloop.tools.pipeline import Checkpoint
from codeloop.tools.registry import ToolCallOutcome
from codeloop.tools.space_tools import space_pipeline

Emit = Callable[[BaseModel, int], Awaitable[None]]
"""Called with each event and the index of the next operation to run (for persistence)."""

RunState = Literal["completed", "awaiting_approval", "error", "cancelled", "limit_reached"]
TIMEOUT_EXIT_CODE = 124
"""Exit code reported for a timed-out command (as coreutils ``timeout`` and the spec's example)."""
NOT_STARTED_EXIT_CODE = -1
"""Exit code reported for a command that could not be started (the protocol's value)."""


class ApprovalMismatchError(ValueError):
    """Raised when an answer names another operation than the one awaiting approval."""


@dataclass(frozen=True)
class RunOutcome:
    """Where a run stopped."""

    state: RunState
    """``completed``, ``awaiting_approval``, ``error`` (system failure), ``cancelled`` or
    ``limit_reached``."""
    cursor: int
    """Index of the next operation to run (the paused one when awaiting approval)."""
    pending_operation_id: str | None = None
    """The operation waiting for approval."""
    run_time_ms: float = 0.0
    """Wall time the run's operations took so far, this call's and earlier calls' (for its limits)."""


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds and ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def operation_id(op: Any, index: int) -> str:
    """The operation's own id, or ``op-N`` (1-based) so that approvals can name it."""
    own = getattr(op, "id", None)
    return own if isinstance(own, str) else f"op-{index + 1}"


def _op_type(op: Any) -> str:
    if isinstance(op, wire.InvalidOperation):
        raw = op.raw
        return str(raw.get("type")) if isinstance(raw, dict) else "unknown"
    return str(op.type)


async def execute_run(operations: list[Any], env: ExecutionEnvironment, policy: Policy, emit: Emit, *,
                      pending: PendingStore, run_id: str, start: int = 0, answered: str | None = None,
                      should_stop: Callable[[], bool] = lambda: False, limits: RunLimits = NO_LIMITS,
                      run_time_ms: float = 0.0, checkpoint: Checkpoint | None = None,
                      started: Callable[[int], Awaitable[None]] | None = None) -> RunOutcome:
    """Run ``operations[start:]`` of run ``run_id``; see the module docstring for the contract.

    ``answered`` is the id of the answered entry of ``pending`` the operation at ``start`` waited
    for (raise :class:`ApprovalMismatchError` when it is another run's or operation's, or has no
    answer yet). ``run_time_ms`` is the time the run's operations already took (before a pause).
    ``checkpoint``: the run's snapshots before and after each changing operation (issue 35).
    """
    index = start
    used_ms = run_time_ms
    pipeline = space_pipeline(env, policy, pending, run_id, checkpoint=checkpoint)
    entry = None if answered is None else _answered_entry(pending, answered, run_id, operations, start)
    while index < len(operations):
        if should_stop():
            await emit(wire.ErrorEvent(timestamp=now_iso(), category="execution", message="run cancelled"),
                       index)
            return RunOutcome("cancelled", index, run_time_ms=used_ms)
        limit = exceeded(limits, index, used_ms)
        if limit is not None:  # before the operation starts: a run never starts one over its limits
            await emit(budget_event(limits, limit, index, used_ms, timestamp=now_iso()), index)
            return RunOutcome(LIMIT_REACHED, index, run_time_ms=used_ms)
        op = operations[index]
        op_id = operation_id(op, index)
        resumed = entry if index == start else None
        if resumed is not None and resumed.status != "approved":
            await emit(_not_approved(resumed, op_id, _op_type(op)), index + 1)
            index += 1
            continue
        if started is not None and _may_change(op, pipeline):
            await started(index)
        began = time.monotonic()
        deadline = asyncio.timeout(None if limits.max_run_time_ms is None
                                   else max(limits.max_run_time_ms - used_ms, 0) / 1000)
        try:
            async with deadline:  # cancelling the operation kills its process group
                event = await _one(op, op_id, pipeline, resumed)
        except Exception as exc:  # the runtime itself failed: report it, stop the run
            used_ms += (time.monotonic() - began) * 1000
            if isinstance(exc, TimeoutError) and deadline.expired():
                await emit(budget_event(limits, "maxRunTime", index + 1, used_ms, timestamp=now_iso(),
                                        cancelled=op_id), index + 1)
                return RunOutcome(LIMIT_REACHED, index + 1, run_time_ms=used_ms)
            why = f"internal error while running {_op_type(op)}: {exc}"
            await emit(wire.ErrorEvent(timestamp=now_iso(), operationId=getattr(op, "id", None),
                                       category="system", message=why), index + 1)
            return RunOutcome("error", index + 1, run_time_ms=used_ms)
        used_ms += (time.monotonic() - began) * 1000
        if isinstance(event, wire.ApprovalRequiredEvent):
            await emit(event, index)
            return RunOutcome("awaiting_approval", index, op_id, run_time_ms=used_ms)
        await emit(event, index + 1)
        index += 1
    return RunOutcome("completed", index, run_time_ms=used_ms)


def idempotent(op: Any) -> bool:
    """True for an operation that gives the same result when run again after a partial run: a
    read, a whole-file write that may overwrite, a message (issue 40: such an operation cut by a
    replica's death is run again on takeover; any other is reported interrupted)."""
    return isinstance(op, wire.ReadFileOperation | wire.MessageOperation) or (
        isinstance(op, wire.CreateFileOperation) and op.overwrite)


def _answered_entry(pending: PendingStore, answered: str, run_id: str, operations: list[Any],
                    start: int) -> PendingCall:
    """The answered entry the operation at ``start`` waited for."""
    entry = pending.get(answered)
    op_id = operation_id(operations[start], start) if start < len(operations) else None
    if entry.session != run_id or entry.step != op_id:
        raise ApprovalMismatchError(f"pending call {answered} is not the one operation {op_id!r} of run "
                                    f"{run_id} waits for")
    if entry.status == "pending":
        raise ApprovalMismatchError(f"pending call {answered} has no answer yet")
    return entry


def _not_approved(entry: PendingCall, op_id: str, op_type: str) -> BaseModel:
    """The event of an operation whose ask was not approved (denied or withdrawn), or whose
    approved run was already taken (it is never run twice)."""
    ts = now_iso()
    if entry.status in ("denied", "withdrawn"):
        why = "denied by the user" if entry.status == "denied" else "its approval was withdrawn"
        why += f": {entry.decision_reason}" if entry.decision_reason else ""
        return wire.PolicyDeniedEvent(timestamp=ts, operationId=op_id, operationType=op_type, reason=why)
    return wire.ErrorEvent(timestamp=ts, operationId=op_id, category="execution",
                           message=f"operation {op_id} was not run again: its approved run was already taken "
                                   f"(pending call {entry.id} is {entry.status})")


_CHANGES = frozenset({Effect.WRITE, Effect.EXEC, Effect.NETWORK})


def _may_change(op: Any, pipeline: Pipeline) -> bool:
    """Whether running ``op`` twice could differ from running it once, by its tool's declared
    effects: only such an operation's start is recorded (a round trip to the database, for a
    takeover to report it interrupted rather than run it again). A read or a message is
    simply run again after a crash."""
    if isinstance(op, wire.InvalidOperation | wire.MessageOperation):
        return False
    return bool(pipeline.registry.effects(op.type).effects & _CHANGES)


async def _one(op: Any, op_id: str, pipeline: Pipeline, resumed: PendingCall | None) -> BaseModel:
    ts = now_iso()
    if isinstance(op, wire.InvalidOperation):
        return wire.ErrorEvent(timestamp=ts, operationId=op.id, category="validation", message=op.error)
    if isinstance(op, wire.MessageOperation):
        return wire.MessageEvent(timestamp=ts, operationId=op.id)
    # The operation is the space's unit of work at the pipeline's checkpoint seam, and the
    # step its pending call is filed under.
    call = PipelineCall(op.type, op.model_dump(exclude={"type", "id"}, exclude_none=True), step=op_id)
    if resumed is not None:  # approved in the store: runs once its claim succeeds
        result = await pipeline.resume(resumed.id, call=call)
    else:
        result = await pipeline.run(call)
    if result.pending is not None:
        asked = result.pending
        return wire.ApprovalRequiredEvent(
            timestamp=ts, operationId=op_id, operationType=op.type, reason=asked.reason,
            details=wire.ApprovalDetails(command=getattr(op, "command", None), path=getattr(op, "path", None),
                                         policy=asked.rule))
    if isinstance(result.data, Decision):
        return wire.PolicyDeniedEvent(timestamp=ts, operationId=op.id, operationType=op.type,
                                      reason=result.data.reason, suggestion=result.data.suggestion)
    if isinstance(op, wire.ShellOperation):
        return _shell_event(op, ts, result)
    return _file_event(op, ts, result)


def _error_of(result: ToolCallOutcome) -> Exception:
    """The typed error of a failed call. A failure without one (an executor's bug, a policy
    that raised) is the runtime's own: raised, so the run ends with a system error."""
    if isinstance(result.data, WorkspaceError | ToolError):
        return result.data
    raise RuntimeError(result.output)


_FILE_EVENTS: dict[type, type[BaseModel]] = {
    wire.CreateFileOperation: wire.CreateFileEvent, wire.ReadFileOperation: wire.ReadFileEvent,
    wire.EditFileOperation: wire.EditFileEvent, wire.DeleteFileOperation: wire.DeleteFileEvent}


def _file_event(op: Any, ts: str, result: ToolCallOutcome) -> BaseModel:
    fields: dict[str, Any] = {"success": True}
    if result.is_error:
        fields = {"success": False, "error": _error_text(op, _error_of(result))}
    elif isinstance(op, wire.CreateFileOperation):
        fields["bytesWritten"] = result.data.bytes_written
    elif isinstance(op, wire.ReadFileOperation):
        fields |= {"content": result.data[0], "encoding": op.encoding, "size": result.data[1]}
    elif isinstance(op, wire.EditFileOperation):
        fields["editsApplied"] = len(op.edits)
    return _FILE_EVENTS[type(op)](timestamp=ts, operationId=op.id, path=op.path, **fields)


def _error_text(op: Any, exc: Exception) -> str:
    """The protocol's fixed text for a failed file operation (the message for the rest)."""
    if not isinstance(exc, ops.OperationError):
        return str(exc)
    match exc.kind:
        case "not_found":
            return "File not found"
        case "is_directory" | "not_a_directory":
            return "Cannot delete a directory (only files)" if isinstance(op, wire.DeleteFileOperation) \
                else "Path is a directory, not a file"
        case "too_large":
            what = "content" if isinstance(op, wire.CreateFileOperation) else "file"
            return f"{what} is {exc.size} bytes, over the {exc.limit}-byte limit"
        case "exists":
            return "File already exists (set overwrite: true to replace it)"
        case "not_text" if isinstance(op, wire.ReadFileOperation):
            return "File is not valid UTF-8 text; read it with encoding \"base64\""
        case "not_text":
            return "File is not valid UTF-8 text and cannot be edited"
        case "empty_match" | "no_match":
            what = "oldContent is empty" if exc.kind == "empty_match" else "oldContent not found"
            return f"edit {(exc.edit_index or 0) + 1} of {len(op.edits)}: {what}; nothing was changed"
    return str(exc)


def _shell_event(op: wire.ShellOperation, ts: str, result: ToolCallOutcome) -> BaseModel:
    def event(**fields: Any) -> wire.ShellEvent:
        return wire.ShellEvent(timestamp=ts, operationId=op.id, command=op.command, **fields)

    outcome = result.data
    if not isinstance(outcome, ops.CommandOutcome):
        exc = _error_of(result)
        if isinstance(exc, ops.OperationError) and exc.kind == "not_a_directory":
            return event(success=False, error=f"cwd {op.cwd!r} is not a directory")
        return event(success=False, error=f"cwd {op.cwd!r}: {exc}")
    if outcome.status == "not_started":
        return event(success=False, exitCode=NOT_STARTED_EXIT_CODE, stdout="", stderr=outcome.stderr,
                     durationMs=outcome.duration_ms, error="command could not be started")
    if outcome.status == "timed_out":
        return event(success=False, exitCode=TIMEOUT_EXIT_CODE, stdout=outcome.stdout, stderr=outcome.stderr,
                     durationMs=outcome.duration_ms, timedOut=True,
                     error=f"command timed out after {outcome.timeout_ms} ms")
    return event(success=outcome.status == "ok", exitCode=outcome.result.exit_code, stdout=outcome.stdout,
                 stderr=outcome.stderr, durationMs=outcome.duration_ms)


