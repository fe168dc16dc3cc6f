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

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.relay.commands import (
    CreateFile,
    DeleteFile,
    Done,
    EditFile,
    Message,
    ParseError,
    ReadFile,
    RelayCommand,
    RunCommand,
)
from codeloop.relay.orphans import MARKER_VARIABLE, kill_marked
from codeloop.relay.results import CommandResult
from codeloop.tools import workspace_ops as ops
from codeloop.tools.truncation import truncate_output


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
        data: dict[str, Any] = {"kind": self.kind}
        for key in ("path", "sha256", "command", "marker"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        if self.result is not None:
            data["result"] = self.result.to_json()
        return data

    @classmethod
    def from_json(cls, data: object) -> Effect:
        """Read the journal form; raise ``ValueError`` when damaged."""
        if not isinstance(data, dict) or data.get("kind") not in ("write", "delete", "process"):
            raise ValueError("an effect needs a kind of write, delete or process")
        result = CommandResult.from_json(data["result"]) if "result" in data else None
        return cls(
            data["kind"],
            data.get("path"),
            data.get("sha256"),
            result,
            data.get("command"),
            data.get("marker"),
        )


BeforeEffect = Callable[[Effect], None]
"""Called right before a change; must persist the effect before returning."""


def _shown(text: str, limit: int = 80) -> str:
    first = text.strip().split("\n", 1)[0]
    more = "\n" in text.strip() or len(first) > limit
    return repr(first[:limit] + (" ..." if more else ""))


def _failure(cmd: RelayCommand, summary: str) -> CommandResult:
    return CommandResult(cmd.name, False, summary)


_FAILURE_TEXTS: dict[str, str] = {
    "outside_workspace": "REJECTED: Path is outside workspace: {path}",
    "not_found": "File {path} not found",
    "is_directory": "{path} is a directory, not a file",
    "not_text": "{path} is not a UTF-8 text file",
    "io": "I/O error on {path}: {error}",
}


def _workspace_failure(cmd: RelayCommand, path: str, exc: ops.OperationError) -> CommandResult:
    """The spec's result line for a failed operation (without host paths)."""
    text = _FAILURE_TEXTS.get(exc.kind, "{path}: {error}")
    return _failure(cmd, text.format(path=repr(path), error=exc))


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256, the fingerprint journaled for writes."""
    return hashlib.sha256(data).hexdigest()


def _journal_write(before: BeforeEffect, result: Callable[[bool], CommandResult]) -> ops.BeforeWrite:
    """Journal a write (with the result to report once it happened) before it happens."""

    def journal(write: ops.PlannedWrite) -> None:
        before(Effect("write", path=write.path, sha256=sha256_hex(write.data), result=result(write.replaced)))

    return journal


async def _create(env: ExecutionEnvironment, cmd: CreateFile, before: BeforeEffect) -> CommandResult:
    def ok(replaced: bool) -> CommandResult:
        return CommandResult(cmd.name, True, f"{'Replaced' if replaced else 'Created'} {cmd.path!r}")

    try:
        written = await ops.create_file(env, cmd.path, cmd.content, before_write=_journal_write(before, ok))
    except ops.OperationError as exc:
        return _workspace_failure(cmd, cmd.path, exc)
    return ok(written.replaced)


async def _edit(env: ExecutionEnvironment, cmd: EditFile, before: BeforeEffect) -> CommandResult:
    added = len(ops.split_lines(cmd.content))
    removed = cmd.end_line - cmd.start_line + 1
    ok = CommandResult(
        cmd.name,
        True,
        f"Edited {cmd.path!r}: replaced lines {cmd.start_line}-{cmd.end_line} ({removed}) with {added} line"
        f"{'s' if added != 1 else ''}",
    )
    try:
        await ops.replace_lines_in_file(env, cmd.path, cmd.start_line, cmd.end_line, cmd.content,
                                        before_write=_journal_write(before, lambda _: ok))
    except ops.OperationError as exc:
        if exc.kind == "not_text":
            return _failure(cmd, f"{cmd.path!r} is not a UTF-8 text file; EDIT_FILE only changes text files")
        if exc.kind == "bad_range":
            hint = "; write it with CREATE_FILE" if exc.count == 0 else ""
            return _failure(
                cmd, f"Invalid line range {cmd.start_line}-{cmd.end_line} for {cmd.path!r}: {exc}{hint}")
        return _workspace_failure(cmd, cmd.path, exc)
    return ok


async def _delete(env: ExecutionEnvironment, cmd: DeleteFile, before: BeforeEffect) -> CommandResult:
    ok = CommandResult(cmd.name, True, f"Deleted {cmd.path!r}")
    try:
        await ops.delete_file(env, cmd.path, before_delete=lambda path: before(Effect("delete", path=path, result=ok)))
    except ops.OperationError as exc:
        if exc.kind == "is_directory":
            return _failure(
                cmd,
                f"{cmd.path!r} is a directory; DELETE_FILE removes files (use RUN_COMMAND rm -r for directories)",
            )
        return _workspace_failure(cmd, cmd.path, exc)
    return ok


async def _read(env: ExecutionEnvironment, cmd: ReadFile) -> CommandResult:
    try:
        await ops.stat_file(env, cmd.path)
    except ops.OperationError as exc:
        if exc.kind == "is_directory":
            return _failure(cmd, f"{cmd.path!r} is a directory; the workspace listing shows its files")
        return _workspace_failure(cmd, cmd.path, exc)
    return CommandResult(cmd.name, True, f"Contents of {cmd.path!r} are under Requested File Contents")


async def _run(
    env: ExecutionEnvironment,
    cmd: RunCommand,
    limits: ExecutionLimits,
    before: BeforeEffect,
    marker: str | None,
) -> CommandResult:
    before(Effect("process", command=cmd.command, marker=marker))
    env_vars = {MARKER_VARIABLE: marker} if marker else None
    outcome = await ops.run_command(env, cmd.command, timeout_ms=limits.timeout_ms, env_vars=env_vars)
    output = truncate_output(outcome.output, limits.output_limit_chars, "head_tail_counted")
    shown = _shown(cmd.command)
    match outcome.status:
        case "timed_out":
            seconds = limits.timeout_ms / 1000
            summary = f"Ran {shown}: timed out after {seconds:g} s; it was stopped with all its child processes"
        case "not_started":
            summary = f"Could not run {shown}"
        case "killed":
            summary = f"Ran {shown}: killed by signal {outcome.signal}"
        case _:
            summary = f"Ran {shown} (exit code {outcome.exit_code})"
    return CommandResult(cmd.name, outcome.status == "ok", summary, output)


async def execute_command(
    cmd: RelayCommand,
    env: ExecutionEnvironment,
    limits: ExecutionLimits,
    before_effect: BeforeEffect,
    marker: str | None = None,
) -> CommandResult:
    """Run one command and describe its outcome; never raises for model mistakes.

    ``marker`` tags a RUN_COMMAND's processes (:mod:`codeloop.relay.orphans`).

    READ_FILE only checks the file here; its contents are read when the next outbox is
    written, so they reflect the later commands of the same reply too.
    """
    match cmd:
        case ParseError():
            return _failure(cmd, f"Parse error at line {cmd.line}: {cmd.message}")
        case CreateFile():
            return await _create(env, cmd, before_effect)
        case EditFile():
            return await _edit(env, cmd, before_effect)
        case DeleteFile():
            return await _delete(env, cmd, before_effect)
        case ReadFile():
            return await _read(env, cmd)
        case RunCommand():
            return await _run(env, cmd, limits, before_effect, marker)
        case Message():
            return CommandResult(cmd.name, True, "Shown to the user")
        case Done():
            return CommandResult(cmd.name, True, "Task marked complete; the session has ended")


async def recover_effect(effect: Effect, env: ExecutionEnvironment) -> CommandResult | None:
    """After a crash: the result of an effect that happened, or None if it did not.

    A write happened when the file now holds exactly the journaled bytes; a delete when
    the file is gone. A command that was started may have done anything, so it is not run
    again: its result says so and asks the model to check.
    """
    if effect.kind == "process":
        killed = kill_marked(effect.marker) if effect.marker else 0
        still = " (it was still running and has now been stopped)" if killed else ""
        return CommandResult(
            "RUN_COMMAND",
            False,
            f"Ran {_shown(effect.command or '')}: interrupted because the relay stopped while it ran{still}; "
            "it was not run again, so check what it did before repeating it",
        )
    path = effect.path or ""
    try:
        if effect.kind == "delete":
            applied = not await env.file_exists(path)
        else:
            applied = sha256_hex(await env.read_bytes(path)) == effect.sha256
    except (WorkspaceError, OSError):
        applied = False
    return effect.result if applied else None
