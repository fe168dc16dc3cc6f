"""The ``shell`` tool (loop spec §3.3, §5.4).

Runs through ``env.exec_command`` (new process group, timeout with SIGTERM → 2 s →
SIGKILL, environment filtering, bounded output): the tool only formats the outcome.
The result is an error when the command timed out, could not start, or exited non-zero
(Appendix B ``ShellExitError``/``ShellTimeout``), so the model sees the failure.
A command that is an ``apply_patch`` heredoc runs the patch directly, as in codex.
"""

from __future__ import annotations

from typing import Any

from codeloop.environments.base import ExecutionEnvironment
from codeloop.tools.apply_patch import APPLY_PATCH, apply_patch_text
from codeloop.tools.effects import ALL_EFFECTS, ToolEffects, shell_line
from codeloop.tools.errors import PatchError
from codeloop.tools.registry import RegisteredTool, ToolContext, ToolOutput, make_tool
from codeloop.tools.workspace_ops import CommandOutcome, run_command

OPENAI_SHELL_TIMEOUT_MS = 10_000
"""codex and gemini-cli default (spec §3.4, §3.6)."""
ANTHROPIC_SHELL_TIMEOUT_MS = 120_000
"""Claude Code default (spec §3.5)."""
MAX_SHELL_TIMEOUT_MS = 600_000
"""Upper bound of ``timeout_ms`` (spec §5.4)."""


def timeout_message(timeout_ms: int) -> str:
    """The §5.4 text, verbatim."""
    return (
        f"[ERROR: Command timed out after {timeout_ms}ms. Partial output is shown above.\n"
        "You can retry with a longer timeout by setting the timeout_ms parameter.]"
    )


def format_outcome(outcome: CommandOutcome) -> ToolOutput:
    """Output, then the timeout message if any, then how it ended and the duration."""
    result = outcome.result
    parts = [result.output.rstrip("\n")] if result.output else []
    if result.truncated:
        total = result.stdout_bytes + result.stderr_bytes
        parts.append(f"[output was {total} bytes; only its head and tail were kept]")
    if outcome.status == "timed_out":
        parts.append(timeout_message(outcome.timeout_ms))
    if outcome.status == "not_started":
        parts.append(f"[the command did not start, duration: {result.duration_ms} ms]")
    else:
        parts.append(f"[exit code: {result.exit_code}, duration: {result.duration_ms} ms]")
    return ToolOutput("\n".join(parts), is_error=outcome.status != "ok", data=outcome)


def is_apply_patch_command(command: str) -> bool:
    """True for ``apply_patch <<'EOF' ... EOF`` typed into the shell, as codex models do."""
    head = command.lstrip()
    return head.startswith((APPLY_PATCH, "applypatch")) and "*** Begin Patch" in command


async def _apply_patch_via_shell(command: str, env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
    """Run the heredoc's patch with the apply_patch code (codex intercepts it the same way:
    there is no ``apply_patch`` program in the workspace)."""
    try:
        outcome = await apply_patch_text(env, command.strip(), ctx=ctx)
    except PatchError as exc:
        return ToolOutput(f"{exc}\n[exit code: 1, duration: 0 ms]", is_error=True)
    return ToolOutput(f"{outcome.summary()}[exit code: 0, duration: 0 ms]")


SHELL = "shell"
"""The tool's name (its one spelling: others import it)."""


SHELL_EFFECTS = ToolEffects(ALL_EFFECTS, None, shell_line())
"""A shell line may do anything to any file: the widest, with the line to judge (approval modes)."""


def shell_tool(default_timeout_ms: int = OPENAI_SHELL_TIMEOUT_MS, description: str | None = None) -> RegisteredTool:
    """``shell(command, timeout_ms?, description?)`` with a profile's default timeout."""

    async def shell(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        if is_apply_patch_command(args["command"]):
            return await _apply_patch_via_shell(args["command"], env, ctx)
        timeout_ms = min(args.get("timeout_ms") or default_timeout_ms, MAX_SHELL_TIMEOUT_MS)
        return format_outcome(await run_command(env, args["command"], timeout_ms=timeout_ms, on_output=ctx.on_output,
                                                before_change=ctx.before_change))

    return make_tool(
        SHELL,
        description
        or (
            "Execute a shell command (bash) in the workspace. Returns stdout, stderr, the exit code "
            f"and the duration. Commands time out after {default_timeout_ms} ms unless timeout_ms "
            f"is given (at most {MAX_SHELL_TIMEOUT_MS} ms)."
        ),
        {
            "command": {"type": "string", "description": "The command to run."},
            "timeout_ms": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds."},
            "description": {"type": "string", "description": "A short description of what the command does."},
        },
        ["command"],
        shell,
        SHELL_EFFECTS,
    )
