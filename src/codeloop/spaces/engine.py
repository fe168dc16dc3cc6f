"""Execute the operations of a run, one event per operation (spaces protocol §Execution Semantics).

Contract of :func:`execute_run`:

- operations run strictly in list order; each produces exactly one event, appended through
  ``emit`` before the next operation starts;
- a failing operation does not stop the run; an invalid operation yields an ``error`` event
  (category ``validation``) and is skipped; a policy ``deny`` yields ``policyDenied``;
- a policy ``ask`` yields ``approvalRequired`` and pauses: the outcome is
  ``awaiting_approval`` with ``cursor`` on that operation. Calling again with an
  :class:`~codeloop.spaces.operations.Approval` for it executes it once without asking
  (``approved``) or emits ``policyDenied`` (``denied``), then continues;
- an unexpected failure of the runtime itself yields an ``error`` event (category
  ``system``) and ends the run with status ``error``.

File operations go through the :class:`~codeloop.environments.base.ExecutionEnvironment`
(whose resolver keeps every path inside the workspace); commands through its
``exec_command`` (process group killed on timeout).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.policy import Decision, Policy, evaluate_command, evaluate_path
from codeloop.spaces.operations import (
    Approval,
    ApprovalDetails,
    ApprovalRequiredEvent,
    CreateFileEvent,
    CreateFileOperation,
    DeleteFileEvent,
    DeleteFileOperation,
    EditFileEvent,
    EditFileOperation,
    ErrorEvent,
    InvalidOperation,
    MessageEvent,
    MessageOperation,
    PolicyDeniedEvent,
    ReadFileEvent,
    ReadFileOperation,
    ShellEvent,
    ShellOperation,
)
from codeloop.tools import workspace_ops as ops

Emit = Callable[[BaseModel, int], Awaitable[None]]
"""Called with each event and the index of the next operation to run (for persistence)."""

RunState = Literal["completed", "awaiting_approval", "error", "cancelled"]
TIMEOUT_EXIT_CODE = 124
"""Exit code reported for a timed-out command (as coreutils ``timeout`` and the spec's example)."""
NOT_STARTED_EXIT_CODE = -1
"""Exit code reported for a command that could not be started (the protocol's value)."""


class ApprovalMismatchError(ValueError):
    """Raised when an approval names another operation than the one awaiting approval."""


@dataclass(frozen=True)
class RunOutcome:
    """Where a run stopped."""

    state: RunState
    """``completed``, ``awaiting_approval``, ``error`` (system failure) or ``cancelled``."""
    cursor: int
    """Index of the next operation to run (the paused one when awaiting approval)."""
    pending_operation_id: str | None = None
    """The operation waiting for approval."""


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds and ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def operation_id(op: Any, index: int) -> str:
    """The operation's own id, or ``op-N`` (1-based) so that approvals can name it."""
    own = getattr(op, "id", None)
    return own if isinstance(own, str) else f"op-{index + 1}"


def _op_type(op: Any) -> str:
    if isinstance(op, InvalidOperation):
        raw = op.raw
        return str(raw.get("type")) if isinstance(raw, dict) else "unknown"
    return str(op.type)


def decide(op: Any, policy: Policy) -> Decision:
    """The policy's verdict on one valid operation."""
    fs = policy.filesystem
    if isinstance(op, MessageOperation):
        return Decision.allow()
    if isinstance(op, CreateFileOperation):
        return evaluate_path(op.path, "write", fs)
    if isinstance(op, ReadFileOperation):
        return evaluate_path(op.path, "read", fs)
    if isinstance(op, EditFileOperation):
        return evaluate_path(op.path, "write", fs)
    if isinstance(op, DeleteFileOperation):
        return evaluate_path(op.path, "delete", fs)
    if isinstance(op, ShellOperation):
        verdict = evaluate_command(op.command, policy.shell, policy.network)
        if op.cwd and verdict.action != "deny":
            cwd_verdict = evaluate_path(op.cwd, "read", fs)
            if cwd_verdict.action == "deny":
                return cwd_verdict
        return verdict
    raise AssertionError(type(op))


async def execute_run(
    operations: list[Any],
    env: ExecutionEnvironment,
    policy: Policy,
    emit: Emit,
    *,
    start: int = 0,
    approval: Approval | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> RunOutcome:
    """Run ``operations[start:]``; see the module docstring for the contract.

    ``approval`` must name the operation at ``start`` (raise :class:`ApprovalMismatchError`).
    """
    index = start
    if approval is not None:
        if index >= len(operations) or operation_id(operations[index], index) != approval.operationId:
            raise ApprovalMismatchError(
                f"operation {approval.operationId!r} is not the one awaiting approval")
    while index < len(operations):
        if should_stop():
            await emit(ErrorEvent(timestamp=now_iso(), category="execution", message="run cancelled"), index)
            return RunOutcome("cancelled", index)
        op = operations[index]
        op_id = operation_id(op, index)
        approved = approval is not None and index == start and approval.decision == "approved"
        if approval is not None and index == start and approval.decision == "denied":
            why = f"denied by the user: {approval.reason}" if approval.reason else "denied by the user"
            await emit(PolicyDeniedEvent(timestamp=now_iso(), operationId=op_id,
                                         operationType=_op_type(op), reason=why), index + 1)
            index += 1
            continue
        try:
            event = await _one(op, op_id, env, policy, approved)
        except Exception as exc:  # the runtime itself failed: report it, stop the run
            await emit(ErrorEvent(timestamp=now_iso(), operationId=getattr(op, "id", None), category="system",
                                  message=f"internal error while running {_op_type(op)}: {exc}"), index + 1)
            return RunOutcome("error", index + 1)
        if isinstance(event, ApprovalRequiredEvent):
            await emit(event, index)
            return RunOutcome("awaiting_approval", index, op_id)
        await emit(event, index + 1)
        index += 1
    return RunOutcome("completed", index)


async def _one(op: Any, op_id: str, env: ExecutionEnvironment, policy: Policy, approved: bool) -> BaseModel:
    ts = now_iso()
    if isinstance(op, InvalidOperation):
        return ErrorEvent(timestamp=ts, operationId=op.id, category="validation", message=op.error)
    verdict = decide(op, policy)
    if verdict.action == "deny":
        return PolicyDeniedEvent(timestamp=ts, operationId=op.id, operationType=op.type,
                                 reason=verdict.reason, suggestion=verdict.suggestion)
    if verdict.action == "ask" and not approved:
        return ApprovalRequiredEvent(
            timestamp=ts, operationId=op_id, operationType=op.type, reason=verdict.reason,
            details=ApprovalDetails(command=getattr(op, "command", None), path=getattr(op, "path", None),
                                    policy=verdict.rule))
    if isinstance(op, MessageOperation):
        return MessageEvent(timestamp=ts, operationId=op.id)
    if isinstance(op, ShellOperation):
        return await _shell(op, env, policy)
    return await _file_op(op, env, policy)


_FILE_EVENTS: dict[type, type[BaseModel]] = {
    CreateFileOperation: CreateFileEvent, ReadFileOperation: ReadFileEvent,
    EditFileOperation: EditFileEvent, DeleteFileOperation: DeleteFileEvent}


async def _file_op(op: Any, env: ExecutionEnvironment, policy: Policy) -> BaseModel:
    ts = now_iso()
    try:
        if isinstance(op, CreateFileOperation):
            return await _create(op, env, policy, ts)
        if isinstance(op, ReadFileOperation):
            return await _read(op, env, policy, ts)
        if isinstance(op, EditFileOperation):
            return await _edit(op, env, policy, ts)
        await ops.delete_file(env, op.path)
        return DeleteFileEvent(timestamp=ts, operationId=op.id, path=op.path, success=True)
    except ops.OperationError as exc:
        error = _error_text(op, exc)
    except _OpFailed as exc:
        error = str(exc)
    return _FILE_EVENTS[type(op)](timestamp=ts, operationId=op.id, path=op.path, success=False, error=error)


def _error_text(op: Any, exc: ops.OperationError) -> str:
    """The protocol's fixed text for a failed file operation (the message for the rest)."""
    match exc.kind:
        case "not_found":
            return "File not found"
        case "is_directory" | "not_a_directory":
            return "Cannot delete a directory (only files)" if isinstance(op, DeleteFileOperation) \
                else "Path is a directory, not a file"
        case "too_large":
            what = "content" if isinstance(op, CreateFileOperation) else "file"
            return f"{what} is {exc.size} bytes, over the {exc.limit}-byte limit"
        case "exists":
            return "File already exists (set overwrite: true to replace it)"
        case "not_text" if isinstance(op, ReadFileOperation):
            return "File is not valid UTF-8 text; read it with encoding \"base64\""
        case "not_text":
            return "File is not valid UTF-8 text and cannot be edited"
        case "empty_match" | "no_match":
            what = "oldContent is empty" if exc.kind == "empty_match" else "oldContent not found"
            return f"edit {(exc.edit_index or 0) + 1} of {len(op.edits)}: {what}; nothing was changed"
    return str(exc)


class _OpFailed(Exception):
    """An operation failed for a reason reported verbatim in its event."""


async def _create(op: CreateFileOperation, env: ExecutionEnvironment, policy: Policy, ts: str) -> BaseModel:
    if op.encoding == "base64":
        try:
            data = base64.b64decode(op.content, validate=True)
        except (binascii.Error, ValueError):
            raise _OpFailed("content is not valid base64") from None
    else:
        data = op.content.encode("utf-8", "surrogatepass")
    written = await ops.create_file(env, op.path, data, overwrite=op.overwrite,
                                    max_bytes=policy.filesystem.max_file_size)
    return CreateFileEvent(timestamp=ts, operationId=op.id, path=op.path, success=True,
                           bytesWritten=written.bytes_written)


async def _read(op: ReadFileOperation, env: ExecutionEnvironment, policy: Policy, ts: str) -> BaseModel:
    data = await ops.read_bytes(env, op.path, max_bytes=policy.filesystem.max_file_size)
    content = base64.b64encode(data).decode("ascii") if op.encoding == "base64" else ops.decode_text(data, op.path)
    return ReadFileEvent(timestamp=ts, operationId=op.id, path=op.path, success=True, content=content,
                         encoding=op.encoding, size=len(data))


async def _edit(op: EditFileOperation, env: ExecutionEnvironment, policy: Policy, ts: str) -> BaseModel:
    edits = [ops.TextEdit(edit.oldContent, edit.newContent) for edit in op.edits]
    await ops.replace_text_in_file(env, op.path, edits, match="first", max_bytes=policy.filesystem.max_file_size)
    return EditFileEvent(timestamp=ts, operationId=op.id, path=op.path, success=True,
                         editsApplied=len(op.edits))


async def _shell(op: ShellOperation, env: ExecutionEnvironment, policy: Policy) -> BaseModel:
    ts = now_iso()
    timeout = min(op.timeout or policy.shell.default_timeout_ms, policy.shell.max_timeout_ms)
    if op.cwd:
        try:
            if not (await env.stat(op.cwd)).is_dir:
                return ShellEvent(timestamp=ts, operationId=op.id, command=op.command, success=False,
                                  error=f"cwd {op.cwd!r} is not a directory")
        except WorkspaceError as exc:
            return ShellEvent(timestamp=ts, operationId=op.id, command=op.command, success=False,
                              error=f"cwd {op.cwd!r}: {exc}")
    outcome = await ops.run_command(env, op.command, timeout_ms=timeout, working_dir=op.cwd or None,
                                    env_vars=dict(op.env) if op.env else None)
    if outcome.status == "not_started":
        return ShellEvent(timestamp=ts, operationId=op.id, command=op.command, success=False,
                          exitCode=NOT_STARTED_EXIT_CODE, stdout="", stderr=outcome.stderr,
                          durationMs=outcome.duration_ms, error="command could not be started")
    if outcome.status == "timed_out":
        return ShellEvent(timestamp=ts, operationId=op.id, command=op.command, success=False,
                          exitCode=TIMEOUT_EXIT_CODE, stdout=outcome.stdout, stderr=outcome.stderr,
                          durationMs=outcome.duration_ms, timedOut=True,
                          error=f"command timed out after {timeout} ms")
    return ShellEvent(timestamp=ts, operationId=op.id, command=op.command, success=outcome.status == "ok",
                      exitCode=outcome.result.exit_code, stdout=outcome.stdout, stderr=outcome.stderr,
                      durationMs=outcome.duration_ms)
