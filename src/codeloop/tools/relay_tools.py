"""The relay's commands as tools, and the relay's pipeline (relay spec "Command Syntax
Reference"; issue 30).

Each tool runs one workspace operation and puts its typed outcome in ``ToolOutput.data``;
``codeloop.relay.executor`` words the spec's result lines from it. The session's policy
preset is the POLICY step, judged where links lead (:mod:`codeloop.tools.preset_policy`).
"""

from __future__ import annotations

from typing import Any

from codeloop.environments.base import ExecutionEnvironment
from codeloop.policy import preset
from codeloop.policy.approval import ToolCallRequest
from codeloop.policy.pending import PendingStore
from codeloop.tools import workspace_ops as ops
from codeloop.tools.call_path import Pipeline, build_pipeline
from codeloop.tools.effects import ALL_EFFECTS, ToolEffects, reads, shell_line, writes
from codeloop.tools.pipeline import Checkpoint
from codeloop.tools.preset_policy import CommandCall, PathCall, preset_policy
from codeloop.tools.registry import Executor, RegisteredTool, ToolContext, ToolOutput, ToolRegistry, make_tool
from codeloop.tools.truncation import TruncationConfig


async def _create(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
    written = await ops.create_file(env, args["path"], args["content"], before_change=ctx.before_change)
    return ToolOutput(f"wrote {written.bytes_written} bytes", data=written)


async def _edit(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
    written = await ops.replace_lines_in_file(env, args["path"], args["start_line"], args["end_line"],
                                              args["content"], before_change=ctx.before_change)
    return ToolOutput(f"wrote {written.bytes_written} bytes", data=written)


async def _delete(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
    await ops.delete_file(env, args["path"], before_change=ctx.before_change)
    return ToolOutput("deleted", data=args["path"])


async def _read(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
    # In a reply the file is only checked: its contents are read (``contents``) when the next
    # outbox is written, so they show what the later commands of the reply did too.
    if not args.get("contents"):
        info = await ops.stat_file(env, args["path"])
        return ToolOutput(f"{info.size} bytes", data=info)
    data = await ops.read_bytes(env, args["path"])
    return ToolOutput(f"read {len(data)} bytes", data=data)


async def _run(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
    outcome = await ops.run_command(env, args["command"], timeout_ms=args["timeout_ms"],
                                    env_vars=args.get("env") or None, before_change=ctx.before_change)
    return ToolOutput(outcome.output, is_error=outcome.status != "ok", data=outcome)


def _tool(name: str, run: Executor, fields: dict[str, Any], effects: ToolEffects,
          optional: tuple[str, ...] = ()) -> RegisteredTool:
    required = [f for f in fields if f not in optional]
    return make_tool(name, f"The relay's {name} command.", fields, required, run, effects)


_TEXT, _LINE = {"type": "string"}, {"type": "integer"}
RELAY_TOOLS = ToolRegistry.of([
    _tool("CREATE_FILE", _create, {"path": _TEXT, "content": _TEXT}, writes("path")),
    _tool("EDIT_FILE", _edit, {"path": _TEXT, "start_line": _LINE, "end_line": _LINE, "content": _TEXT},
          writes("path")),
    _tool("DELETE_FILE", _delete, {"path": _TEXT}, writes("path")),
    _tool("READ_FILE", _read, {"path": _TEXT, "contents": {"type": "boolean"}}, reads("path"),
          optional=("contents",)),
    _tool("RUN_COMMAND", _run, {"command": _TEXT, "timeout_ms": _LINE,
                                "env": {"type": "object", "additionalProperties": _TEXT}},
          ToolEffects(ALL_EFFECTS, None, shell_line()), optional=("env",)),
])
"""The relay's commands that touch the workspace, as tools; ``ToolOutput.data`` holds the
typed outcome the relay words its results from."""


def _judged(call: ToolCallRequest) -> CommandCall | PathCall | None:
    """What each relay command is to the session's policy. The marker variable the relay sets
    on RUN_COMMAND is its own, not the model's: only the line is judged, as before."""
    args = call.arguments
    match call.name:
        case "RUN_COMMAND":
            return CommandCall(args["command"])
        case "CREATE_FILE":
            return PathCall(args["path"], "write", len(args["content"].encode("utf-8", "surrogatepass")))
        case "EDIT_FILE":
            return PathCall(args["path"], "write")
        case "DELETE_FILE":
            return PathCall(args["path"], "delete")
        case "READ_FILE":
            return PathCall(args["path"], "read")
    return None


def relay_pipeline(env: ExecutionEnvironment, policy_name: str, output_limit_chars: int,
                   pending: PendingStore | None = None, session: str = "",
                   checkpoint: Checkpoint | None = None) -> Pipeline:
    """The relay's pipeline: its commands as tools, the session's preset as the POLICY step,
    an "ask" an entry of ``pending`` for relay session ``session`` (held until somebody answers
    it: ``codeloop relay approve``, issue 34), RUN_COMMAND's output cut (relay spec: head and
    tail within ``output_limit_chars``); ``checkpoint``: the session's snapshots (issue 35,
    ``codeloop relay rewind``)."""
    truncation = TruncationConfig(tool_output_limits={"RUN_COMMAND": output_limit_chars},
                                  tool_line_limits={"RUN_COMMAND": None},
                                  tool_truncation_modes={"RUN_COMMAND": "head_tail_counted"})
    return build_pipeline(RELAY_TOOLS, env, policy=preset_policy(preset(policy_name), _judged),
                          truncation=truncation, pending=pending, session=session, face="relay",
                          checkpoint=checkpoint)
