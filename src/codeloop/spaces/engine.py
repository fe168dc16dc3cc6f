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
  ``system``) and ends the run with status ``error``;
- with :class:`~codeloop.spaces.limits.RunLimits`, the limits are checked before each
  operation starts and an operation still running when ``maxRunTime`` passes is cancelled;
  either stop is an ``error`` event with ``details.code`` ``budgetExceeded`` and the outcome
  ``limit_reached`` (see :mod:`codeloop.spaces.limits`).

Each file operation and command is a tool call through
:func:`~codeloop.tools.pipeline.execute_tool_call` (policy, approval, execution) on the
space's registry (:func:`space_registry`), whose tools run the workspace operations of
:mod:`codeloop.tools.workspace_ops` with the policy's limits; this module only turns the
typed outcomes into the protocol's events and texts.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.policy import (
    Decision,
    Policy,
    evaluate_command,
    evaluate_path,
    is_read_only_line,
    judge_env,
    strictest,
)
from codeloop.policy.approval import ToolCallRequest, ToolPolicy
from codeloop.spaces import operations as wire
from codeloop.spaces.limits import LIMIT_REACHED, NO_LIMITS, RunLimits, budget_event, exceeded
from codeloop.tools import workspace_ops as ops
from codeloop.tools.effects import ALL_EFFECTS, ToolEffects, reads, shell_line, writes
from codeloop.tools.errors import ToolError
from codeloop.tools.pipeline import execute_tool_call
from codeloop.tools.registry import (
    Executor,
    RegisteredTool,
    ToolCallOutcome,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    make_tool,
)

Emit = Callable[[BaseModel, int], Awaitable[None]]
"""Called with each event and the index of the next operation to run (for persistence)."""

RunState = Literal["completed", "awaiting_approval", "error", "cancelled", "limit_reached"]
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


_PATH_ACCESS: dict[str, Literal["read", "write", "delete"]] = {
    "createFile": "write", "readFile": "read", "editFile": "write", "deleteFile": "delete"}


def decide(name: str, args: Mapping[str, Any], policy: Policy, root: str | None = None) -> Decision:
    """The policy's verdict on one operation (its type and its arguments). ``root``, the
    workspace on this host, lets paths be judged where their links lead."""
    if name == "shell":
        verdict = strictest([evaluate_command(args["command"], policy.shell, policy.network),
                             judge_env(args.get("env") or {}, policy.shell, policy.network, root)])
        if verdict.action == "allow" and policy.unsandboxed and not is_read_only_line(args["command"]):
            verdict = Decision.ask("commands run without the bubblewrap sandbox here, so a command that is "
                                   "not read-only needs approval", "sandbox.unavailable")
        if args.get("cwd") and verdict.action != "deny":
            cwd_verdict = evaluate_path(args["cwd"], "read", policy.filesystem, root=root)
            if cwd_verdict.action == "deny":
                return cwd_verdict
        return verdict
    return evaluate_path(args["path"], _PATH_ACCESS[name], policy.filesystem, root=root)


def space_policy(policy: Policy, verdicts: list[Decision]) -> ToolPolicy:
    """The pipeline's POLICY step for a space: ``policy``'s verdict, also appended to
    ``verdicts`` (the events need its rule and suggestion)."""

    async def check(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
        verdict = decide(call.name, call.arguments, policy, env.working_directory())
        verdicts.append(verdict)
        return verdict

    return check


async def execute_run(operations: list[Any], env: ExecutionEnvironment, policy: Policy, emit: Emit, *,
                      start: int = 0, approval: wire.Approval | None = None,
                      should_stop: Callable[[], bool] = lambda: False, limits: RunLimits = NO_LIMITS,
                      run_time_ms: float = 0.0) -> RunOutcome:
    """Run ``operations[start:]``; see the module docstring for the contract.

    ``approval`` must name the operation at ``start`` (raise :class:`ApprovalMismatchError`).
    ``run_time_ms`` is the time the run's operations already took (before a pause).
    """
    index = start
    used_ms = run_time_ms
    if approval is not None:
        if index >= len(operations) or operation_id(operations[index], index) != approval.operationId:
            raise ApprovalMismatchError(f"operation {approval.operationId!r} is not the one awaiting "
                                        "approval")
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
        approved = approval is not None and index == start and approval.decision == "approved"
        if approval is not None and index == start and approval.decision == "denied":
            why = f"denied by the user: {approval.reason}" if approval.reason else "denied by the user"
            await emit(wire.PolicyDeniedEvent(timestamp=now_iso(), operationId=op_id,
                                              operationType=_op_type(op), reason=why), index + 1)
            index += 1
            continue
        began = time.monotonic()
        deadline = asyncio.timeout(None if limits.max_run_time_ms is None
                                   else max(limits.max_run_time_ms - used_ms, 0) / 1000)
        try:
            async with deadline:  # cancelling the operation kills its process group
                event = await _one(op, op_id, env, policy, approved)
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


async def _one(op: Any, op_id: str, env: ExecutionEnvironment, policy: Policy, approved: bool) -> BaseModel:
    ts = now_iso()
    if isinstance(op, wire.InvalidOperation):
        return wire.ErrorEvent(timestamp=ts, operationId=op.id, category="validation", message=op.error)
    if isinstance(op, wire.MessageOperation):
        return wire.MessageEvent(timestamp=ts, operationId=op.id)
    verdicts: list[Decision] = []

    async def approver(call: ToolCallRequest, reason: str) -> bool:
        return approved

    result = await execute_tool_call(
        space_registry(policy), op.type, op.model_dump(exclude={"type", "id"}, exclude_none=True), env,
        policy=space_policy(policy, verdicts), approver=approver)
    verdict = verdicts[-1] if verdicts else None
    if verdict is not None and verdict.action == "deny":
        return wire.PolicyDeniedEvent(timestamp=ts, operationId=op.id, operationType=op.type,
                                      reason=verdict.reason, suggestion=verdict.suggestion)
    if verdict is not None and verdict.action == "ask" and not approved:
        return wire.ApprovalRequiredEvent(
            timestamp=ts, operationId=op_id, operationType=op.type, reason=verdict.reason,
            details=wire.ApprovalDetails(command=getattr(op, "command", None), path=getattr(op, "path", None),
                                         policy=verdict.rule))
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


# -- the space's tools: each runs one workspace operation, with the policy's limits ------------


async def run_file_operation(name: str, args: dict[str, Any], env: ExecutionEnvironment,
                             policy: Policy) -> ToolCallOutcome:
    """One file operation outside a run (the HTTP file endpoints), through the same tools and
    POLICY step as a run's; an operation the policy would ask about is not run (nobody can
    approve it there)."""
    return await execute_tool_call(space_registry(policy), name, args, env,
                                   policy=space_policy(policy, []))


def _within(change: ops.PlannedChange, max_bytes: int) -> None:
    """maxFileSize holds for what an edit would write, not only for what it read."""
    if change.data is not None and len(change.data) > max_bytes:
        raise ops.OperationError("too_large", f"the edited {change.path!r} would be {len(change.data)} bytes, "
                                 f"over the {max_bytes}-byte limit", change.path or "", size=len(change.data),
                                 limit=max_bytes)


@functools.lru_cache(maxsize=64)
def space_registry(policy: Policy) -> ToolRegistry:
    """The tools of a space's operations; ``ToolOutput.data`` holds the typed outcome. Built
    once per policy (every operation of every run asks for it)."""
    max_bytes = policy.filesystem.max_file_size

    async def create(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        if args.get("encoding") == "base64":
            try:
                data = base64.b64decode(args["content"], validate=True)
            except (binascii.Error, ValueError):
                raise ToolError("content is not valid base64") from None
        else:
            data = args["content"].encode("utf-8", "surrogatepass")
        # Base64 content is binary: written exactly; UTF-8 text over a CRLF/BOM file keeps them.
        written = await ops.create_file(env, args["path"], data, overwrite=bool(args.get("overwrite")),
                                        max_bytes=max_bytes, keep_format=args.get("encoding") != "base64")
        return ToolOutput(f"wrote {written.bytes_written} bytes", data=written)

    async def read(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        data = await ops.read_bytes(env, args["path"], max_bytes=max_bytes)
        if args.get("encoding") == "base64":
            content = base64.b64encode(data).decode("ascii")
        else:
            content = ops.decode_text(data, args["path"])
        return ToolOutput(f"read {len(data)} bytes", data=(content, len(data)))

    async def edit(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        edits = [ops.TextEdit(e["oldContent"], e["newContent"]) for e in args["edits"]]
        changed = await ops.replace_text_in_file(env, args["path"], edits, match="first", max_bytes=max_bytes,
                                                 before_change=lambda change: _within(change, max_bytes))
        return ToolOutput(f"applied {changed} edits", data=changed)

    async def delete(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        await ops.delete_file(env, args["path"])
        return ToolOutput("deleted", data=args["path"])

    async def shell(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        timeout = min(args.get("timeout") or policy.shell.default_timeout_ms, policy.shell.max_timeout_ms)
        outcome = await ops.run_command(env, args["command"], timeout_ms=timeout,
                                        working_dir=args.get("cwd") or None, env_vars=args.get("env") or None)
        return ToolOutput(f"command {outcome.status}", is_error=outcome.status != "ok", data=outcome)

    def tool(name: str, run: Executor, fields: dict[str, Any], required: list[str],
             effects: ToolEffects) -> RegisteredTool:
        return make_tool(name, f"The spaces {name} operation.", fields, required, run, effects)

    text, flag = {"type": "string"}, {"type": "boolean"}
    encoding = {"enum": ["utf-8", "base64"]}
    edits = {"type": "array", "items": {"type": "object"}}
    return ToolRegistry.of([
        tool("createFile", create, {"path": text, "content": text, "encoding": encoding, "overwrite": flag},
             ["path", "content"], writes("path")),
        tool("readFile", read, {"path": text, "encoding": encoding}, ["path"], reads("path")),
        tool("editFile", edit, {"path": text, "edits": edits}, ["path", "edits"], writes("path")),
        tool("deleteFile", delete, {"path": text}, ["path"], writes("path")),
        tool("shell", shell, {"command": text, "cwd": text, "timeout": {"type": "integer"},
                              "env": {"type": "object", "additionalProperties": text}}, ["command"],
             ToolEffects(ALL_EFFECTS, None, shell_line())),
    ])
