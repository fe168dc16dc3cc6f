"""Running one relay command on a workspace (relay spec "Command Syntax Reference",
"Security Model", "Error Handling / Execution Errors").

Every file operation and command goes through an :class:`ExecutionEnvironment`, so paths
are judged by the one resolver and processes are started and killed by the one runner.
Nothing here raises for anything the model wrote: failures are ``CommandResult`` values.

Crash safety: right before a command changes the workspace, :func:`execute_command`
calls ``before_effect`` with an :class:`Effect` describing the change (for a write, the
SHA-256 of the bytes about to be written). The step journals it, so after a crash
:func:`recover_effect` can tell whether the change happened, and it is never done twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.policy import Decision
from codeloop.relay import commands as c
from codeloop.relay.orphans import MARKER_VARIABLE, kill_marked
from codeloop.relay.results import CommandResult
from codeloop.tools import outcomes as ops
from codeloop.tools.call_path import Pipeline, PipelineCall
from codeloop.tools.registry import ToolCallOutcome
from codeloop.tools.text_endings import split_keeping_ends


@dataclass(frozen=True)
class ExecutionLimits:
    """Limits of RUN_COMMAND (spec: 30 s, 4000 characters; both configurable)."""

    timeout_ms: int = 30_000
    """Wall-clock limit; then the command's whole process group is killed."""
    output_limit_chars: int = 4000
    """Characters of output kept (head and tail)."""


@dataclass(frozen=True)
class Effect:
    """A change about to be made to the workspace, journaled before it happens."""

    kind: Literal["write", "delete", "process"]
    """What kind of change."""
    path: str | None = None
    """The path as the model wrote it (write, delete)."""
    sha256: str | None = None
    """Hex digest of the bytes about to be written (write)."""
    result: CommandResult | None = None
    """The result to report once the change is known to have happened (write, delete)."""
    command: str | None = None
    """The shell command (process)."""
    marker: str | None = None
    """Value of ``CODELOOP_RELAY_COMMAND`` in the command's environment (process), used to
    find it if it outlives a killed step."""

    def to_json(self) -> dict[str, Any]:
        """Journal form."""
        data = {key: value for key in ("kind", "path", "sha256", "command", "marker")
                if (value := getattr(self, key)) is not None}
        return data | ({"result": self.result.to_json()} if self.result is not None else {})

    @classmethod
    def from_json(cls, data: object) -> Effect:
        """Read the journal form; raise ``ValueError`` when damaged."""
        if not isinstance(data, dict) or data.get("kind") not in ("write", "delete", "process"):
            raise ValueError("an effect needs a kind of write, delete or process")
        result = CommandResult.from_json(data["result"]) if "result" in data else None
        return cls(data["kind"], data.get("path"), data.get("sha256"), result, data.get("command"),
                   data.get("marker"))


BeforeEffect = Callable[[Effect], None]
"""Called right before a change; must persist the effect before returning."""


def _shown(text: str, limit: int = 80) -> str:
    first = text.strip().split("\n", 1)[0]
    more = "\n" in text.strip() or len(first) > limit
    return repr(first[:limit] + (" ..." if more else ""))


def _failure(cmd: c.RelayCommand, summary: str) -> CommandResult:
    return CommandResult(cmd.name, False, summary)


sha256_hex = ops.fingerprint
"""Hex SHA-256, the fingerprint journaled for writes."""


def _arguments(cmd: c.RelayCommand, limits: ExecutionLimits, marker: str | None) -> dict[str, Any]:
    match cmd:
        case c.CreateFile():
            return {"path": cmd.path, "content": cmd.content}
        case c.EditFile():
            return {"path": cmd.path, "start_line": cmd.start_line, "end_line": cmd.end_line, "content": cmd.content}
        case c.RunCommand():
            marked = {"env": {MARKER_VARIABLE: marker}} if marker else {}
            return {"command": cmd.command, "timeout_ms": limits.timeout_ms} | marked
    return {"path": getattr(cmd, "path", "")}


# -- the spec's result texts ----------------------------------------------------------------


def _succeeded(cmd: c.RelayCommand, replaced: bool) -> CommandResult:
    """The result line of a command that did what it said."""
    match cmd:
        case c.CreateFile():
            summary = f"{'Replaced' if replaced else 'Created'} {cmd.path!r}"
        case c.EditFile():
            added = len(split_keeping_ends(cmd.content))
            summary = (
                f"Edited {cmd.path!r}: replaced lines {cmd.start_line}-{cmd.end_line} "
                f"({cmd.end_line - cmd.start_line + 1}) with {added} line{'s' if added != 1 else ''}"
            )
        case c.DeleteFile():
            summary = f"Deleted {cmd.path!r}"
        case _:
            summary = f"Contents of {getattr(cmd, 'path', '')!r} are under Requested File Contents"
    return CommandResult(cmd.name, True, summary)


_FAILURE_TEXTS: dict[str, str] = {
    "outside_workspace": "REJECTED: Path is outside workspace: {path}",
    "not_found": "File {path} not found",
    "is_directory": "{path} is a directory, not a file",
    "not_text": "{path} is not a UTF-8 text file",
    "io": "I/O error on {path}: {error}",
}


def _failed(cmd: c.RelayCommand, path: str, exc: ops.OperationError) -> CommandResult:
    """The spec's result line for a failed operation (without host paths)."""
    match cmd, exc.kind:
        case c.EditFile(), "not_text":
            return _failure(cmd, f"{path!r} is not a UTF-8 text file; EDIT_FILE only changes text files")
        case c.EditFile(), "bad_range":
            hint = "; write it with CREATE_FILE" if exc.count == 0 else ""
            return _failure(cmd, f"Invalid line range {cmd.start_line}-{cmd.end_line} for {path!r}: {exc}{hint}")
        case c.DeleteFile(), "is_directory":
            return _failure(
                cmd, f"{path!r} is a directory; DELETE_FILE removes files (use RUN_COMMAND rm -r for directories)")
        case c.ReadFile(), "is_directory":
            return _failure(cmd, f"{path!r} is a directory; the workspace listing shows its files")
    text = _FAILURE_TEXTS.get(exc.kind, "{path}: {error}")
    return _failure(cmd, text.format(path=repr(path), error=exc))


def _ran(cmd: c.RunCommand, outcome: ops.CommandOutcome, output: str) -> CommandResult:
    shown = _shown(cmd.command)
    match outcome.status:
        case "timed_out":
            seconds = outcome.timeout_ms / 1000
            summary = f"Ran {shown}: timed out after {seconds:g} s; it was stopped with all its child processes"
        case "not_started":
            summary = f"Could not run {shown}"
        case "killed":
            summary = f"Ran {shown}: killed by signal {outcome.signal}"
        case _:
            summary = f"Ran {shown} (exit code {outcome.exit_code})"
    return CommandResult(cmd.name, outcome.status == "ok", summary, output)


def _translate(cmd: c.RelayCommand, result: ToolCallOutcome) -> CommandResult:
    data = result.data
    if isinstance(data, ops.OperationError):
        return _failed(cmd, getattr(cmd, "path", ""), data)
    if isinstance(cmd, c.RunCommand) and isinstance(data, ops.CommandOutcome):
        return _ran(cmd, data, result.output)
    if result.is_error:
        return _failure(cmd, result.output)
    return _succeeded(cmd, isinstance(data, ops.Written) and data.replaced)


@dataclass(frozen=True)
class Held:
    """The policy sent the command for approval: it did not run; it waits in the store."""

    reason: str
    """Why the policy asks."""
    pending: str
    """The id of its entry in the approvals store."""


def _refused(cmd: c.RelayCommand, policy_name: str, decision: Decision) -> CommandResult:
    fix = f" ({decision.suggestion})" if decision.suggestion else ""
    return _failure(cmd, f"Not run: the relay policy '{policy_name}' refuses it: {decision.reason}{fix}")


async def execute_command(cmd: c.RelayCommand, pipeline: Pipeline, policy_name: str, limits: ExecutionLimits,
                          before_effect: BeforeEffect, marker: str | None = None,
                          approved: str | None = None, step: int | None = None) -> CommandResult | Held:
    """Run one command and describe its outcome; never raises for model mistakes.

    Workspace commands run as tool calls through the relay's pipeline
    (:func:`relay_pipeline`): the session's policy judges each first (a refusal is a FAILED
    result naming ``policy_name``; an "ask" becomes an entry of the pipeline's pending store and
    comes back as :class:`Held`). ``approved`` is the id of an approved entry for this command:
    it runs once its claim succeeds (``Pipeline.resume``; claimed before, by a step that
    stopped, it is not run again). Each change is journaled with ``before_effect`` before it
    happens; a journal that cannot be written stops the step (its error is raised).
    ``marker`` tags a RUN_COMMAND's processes (:mod:`codeloop.relay.orphans`); ``step`` is
    the reply's sequence number, the relay's unit of work at the pipeline's checkpoint seam.

    READ_FILE only checks the file here; its contents are read when the next outbox is
    written (:func:`read_contents`), so they reflect the later commands of the same reply too.
    """
    match cmd:
        case c.ParseError():
            return _failure(cmd, f"Parse error at line {cmd.line}: {cmd.message}")
        case c.Message():
            return CommandResult(cmd.name, True, "Shown to the user")
        case c.Done():
            return CommandResult(cmd.name, True, "Task marked complete; the session has ended")
    journal_failures: list[Exception] = []

    def journal(change: ops.PlannedChange) -> None:
        if change.kind == "process":
            effect = Effect("process", command=change.command, marker=marker)
        else:
            ok = _succeeded(cmd, change.replaced)
            sha256 = sha256_hex(change.data) if change.data is not None else None
            effect = Effect(change.kind, path=change.path, sha256=sha256, result=ok)
        try:
            before_effect(effect)
        except Exception as exc:
            journal_failures.append(exc)
            raise

    call = PipelineCall(cmd.name, _arguments(cmd, limits, marker), before_change=journal, step=step)
    if approved is not None:  # the store's answer is this call's POLICY step
        result = await pipeline.resume(approved, call=call)
    else:
        result = await pipeline.run(call)
    if journal_failures:
        raise journal_failures[0]
    if result.pending is not None and pipeline.approvals is None:  # nothing stored it: nobody can answer
        return _failure(cmd, f"Not run: it needs approval ({result.pending.reason}) and nobody can give it here")
    if result.pending is not None:
        return Held(result.pending.reason, result.pending.id)
    if isinstance(result.data, Decision):
        return _refused(cmd, policy_name, result.data)
    return _translate(cmd, result)


async def read_contents(pipeline: Pipeline, path: str) -> bytes | str:
    """The bytes of a READ_FILE's file as they are now, read through the pipeline (judged
    again: a link swapped in after the command was checked is judged where it leads); else
    why it cannot be shown."""
    result = await pipeline.run(PipelineCall("READ_FILE", {"path": path, "contents": True}))
    if isinstance(result.data, bytes) and not result.is_error:
        return result.data
    if isinstance(result.data, Decision):
        return f"not shown: the relay policy refuses it: {result.data.reason}"
    if isinstance(result.data, ops.OperationError) and result.data.kind == "not_found":
        return "this file no longer exists"
    return f"cannot be read: {result.full_output}"


async def recover_effect(effect: Effect, env: ExecutionEnvironment) -> CommandResult | None:
    """After a crash: the result of an effect that happened, or None if it did not.

    A write happened when the file now holds exactly the journaled bytes; a delete when
    the file is gone. A command that was started may have done anything, so it is not run
    again: its result says so and asks the model to check.
    """
    if effect.kind == "process":
        killed = kill_marked(effect.marker) if effect.marker else 0
        still = " (it was still running and has now been stopped)" if killed else ""
        return CommandResult("RUN_COMMAND", False, f"Ran {_shown(effect.command or '')}: interrupted "
                             f"because the relay stopped while it ran{still}; it was not run again, so check "
                             "what it did before repeating it")
    path = effect.path or ""
    try:
        if effect.kind == "delete":
            applied = not await env.file_exists(path)
        else:
            applied = sha256_hex(await env.read_bytes(path)) == effect.sha256
    except (WorkspaceError, OSError):
        applied = False
    return effect.result if applied else None
