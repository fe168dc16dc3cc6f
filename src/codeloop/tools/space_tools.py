"""The spaces operations as tools, and a space's pipeline (spaces protocol §Operations; issue 30).

Each tool runs one workspace operation with the space policy's limits (``maxFileSize``,
the shell timeouts) and puts its typed outcome in ``ToolOutput.data``;
``codeloop.spaces.engine`` and the HTTP file endpoints word the protocol's events and
errors from it. The space's policy is the POLICY step, judged where links lead
(:mod:`codeloop.tools.preset_policy`). ``getFile`` is no operation of the protocol (a run's
operations are validated against its schema first): it serves ``GET .../files``, a file's
bytes or a directory's entries.
"""

from __future__ import annotations

import base64
import binascii
import functools
from typing import Any, Literal

from codeloop.environments.base import ExecutionEnvironment
from codeloop.policy import Policy
from codeloop.policy.approval import ToolCallRequest
from codeloop.policy.pending import PendingStore
from codeloop.tools import workspace_ops as ops
from codeloop.tools.call_path import Pipeline, build_pipeline
from codeloop.tools.effects import ALL_EFFECTS, ToolEffects, reads, shell_line, writes
from codeloop.tools.errors import ToolError
from codeloop.tools.pipeline import Checkpoint
from codeloop.tools.preset_policy import CommandCall, PathCall, preset_policy
from codeloop.tools.registry import Executor, RegisteredTool, ToolContext, ToolOutput, ToolRegistry, make_tool

_PATH_ACCESS: dict[str, Literal["read", "write", "delete"]] = {
    "createFile": "write", "readFile": "read", "editFile": "write", "deleteFile": "delete", "getFile": "read"}


def _judged(call: ToolCallRequest) -> CommandCall | PathCall:
    """What each operation is to the space's policy."""
    args = call.arguments
    if call.name == "shell":
        return CommandCall(args["command"], args.get("env") or {}, args.get("cwd") or None)
    return PathCall(args["path"], _PATH_ACCESS[call.name])


def space_pipeline(env: ExecutionEnvironment, policy: Policy, pending: PendingStore | None = None,
                   run_id: str = "", checkpoint: Checkpoint | None = None) -> Pipeline:
    """A space's pipeline: its operations as tools under ``policy`` (also the POLICY step); an
    ask is an entry of ``pending`` (the spaces database's store) for run ``run_id``, which the
    run's resume answers. Without a store (the HTTP file endpoints) an ask is not run.
    ``checkpoint``: the run's snapshots (issue 35, ``POST /v1/runs/{id}/rewind``)."""
    return build_pipeline(space_registry(policy), env, policy=preset_policy(policy, _judged), pending=pending,
                          session=run_id, face="spaces", checkpoint=checkpoint)


def _within(max_bytes: int, ctx: ToolContext, change: ops.PlannedChange) -> None:
    """maxFileSize holds for what an edit would write, not only for what it read; then the
    call's own ``before_change``."""
    if change.data is not None and len(change.data) > max_bytes:
        raise ops.OperationError("too_large", f"the edited {change.path!r} would be {len(change.data)} bytes, "
                                 f"over the {max_bytes}-byte limit", change.path or "", size=len(change.data),
                                 limit=max_bytes)
    if ctx.before_change is not None:
        ctx.before_change(change)


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
                                        max_bytes=max_bytes, keep_format=args.get("encoding") != "base64",
                                        before_change=ctx.before_change)
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
                                                 before_change=functools.partial(_within, max_bytes, ctx))
        return ToolOutput(f"applied {changed} edits", data=changed)

    async def delete(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        await ops.delete_file(env, args["path"], before_change=ctx.before_change)
        return ToolOutput("deleted", data=args["path"])

    async def get(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        # GET .../files: a directory's entries, or a file's bytes through the one bounded read.
        try:
            data = await ops.read_bytes(env, args["path"], max_bytes=max_bytes)
        except ops.OperationError as exc:
            if exc.kind != "is_directory":
                raise
            entries = await env.list_directory(args["path"])
            return ToolOutput(f"{len(entries)} entries", data=entries)
        return ToolOutput(f"read {len(data)} bytes", data=data)

    async def shell(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        timeout = min(args.get("timeout") or policy.shell.default_timeout_ms, policy.shell.max_timeout_ms)
        outcome = await ops.run_command(env, args["command"], timeout_ms=timeout,
                                        working_dir=args.get("cwd") or None, env_vars=args.get("env") or None,
                                        before_change=ctx.before_change)
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
        tool("getFile", get, {"path": text}, ["path"], reads("path")),
        tool("shell", shell, {"command": text, "cwd": text, "timeout": {"type": "integer"},
                              "env": {"type": "object", "additionalProperties": text}}, ["command"],
             ToolEffects(ALL_EFFECTS, None, shell_line())),
    ])
