"""The registry and the pipeline (loop spec §3.7, §3.8, §9.3, Appendix B).

The tools registered here never touch the environment, so ``env`` is a placeholder:
the pipeline itself only hands it to executors and policies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import FileNotFoundInWorkspaceError
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.errors import ConfigurationError
from codeloop.llm.types import ToolDefinition
from codeloop.policy import Decision
from codeloop.policy.approval import Effect
from codeloop.policy.pending import PendingCall, SqlitePendingStore
from codeloop.tools import (
    RegisteredTool,
    ToolCallRequest,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    TruncationConfig,
    execute_tool_call,
)
from codeloop.tools.call_path import PipelineCall, build_pipeline
from codeloop.tools.sets import all_tools_registry
from codeloop.tools.tool_events import ToolCallEnded, ToolCallStarted, ToolEvent

ENV = cast(ExecutionEnvironment, object())

SCHEMA = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string"},
        "limit": {"type": "integer"},
        "mode": {"type": "string", "enum": ["a", "b"]},
    },
    "required": ["file_path"],
    "additionalProperties": False,
}


def _tool(name: str = "echo", result: Any = None, raises: Exception | None = None) -> RegisteredTool:
    async def run(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> Any:
        if raises is not None:
            raise raises
        return result if result is not None else f"{name}:{args['file_path']}"

    return RegisteredTool(ToolDefinition(name, f"{name} tool", SCHEMA), run)


def test_3_8_definition_root_must_be_object() -> None:
    with pytest.raises(ConfigurationError, match="root"):
        ToolDefinition("x", "d", {"type": "array"})


def test_3_7_latest_registration_wins() -> None:
    registry = ToolRegistry()
    registry.register(_tool("echo", "first"))
    registry.register(_tool("other"))
    registry.register(_tool("echo", "second"))
    assert sorted(registry.names()) == ["echo", "other"]
    assert len(registry.definitions()) == 2
    registry.unregister("other")
    assert registry.get("other") is None
    assert registry.names() == ["echo"]


async def test_3_8_executes_and_returns_text() -> None:
    result = await execute_tool_call(ToolRegistry.of([_tool()]), "echo", {"file_path": "a.py"}, ENV)
    assert not result.is_error
    assert result.output == "echo:a.py" == result.full_output
    assert result.tool_name == "echo"


async def test_3_8_arguments_as_json_string_are_parsed() -> None:
    result = await execute_tool_call(ToolRegistry.of([_tool()]), "echo", '{"file_path": "b"}', ENV)
    assert result.output == "echo:b"


async def test_9_3_malformed_json_arguments_become_an_error_result() -> None:
    result = await execute_tool_call(ToolRegistry.of([_tool()]), "echo", '{"file_path": ', ENV)
    assert result.is_error
    assert "not valid JSON" in result.output and "echo" in result.output


async def test_9_3_unknown_tool_is_an_error_result_naming_the_tools() -> None:
    result = await execute_tool_call(ToolRegistry.of([_tool()]), "nope", {}, ENV)
    assert result.is_error
    assert result.output == "Unknown tool 'nope'. Available tools: echo."


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, "missing required argument 'file_path'"),
        ({"file_path": 3}, "argument 'file_path' must be of type string, got integer (3)"),
        ({"file_path": "a", "limit": "ten"}, "argument 'limit' must be of type integer, got string (\"ten\")"),
        ({"file_path": "a", "mode": "c"}, "argument 'mode' must be one of \"a\", \"b\", got \"c\""),
        ({"file_path": "a", "path": "b"}, "unexpected argument 'path' (valid arguments: file_path, limit, mode)"),
        ([1, 2], "expected a JSON object, got array"),
    ],
)
async def test_9_3_schema_violations_name_the_argument(args: Any, expected: str) -> None:
    result = await execute_tool_call(ToolRegistry.of([_tool()]), "echo", args, ENV)
    assert result.is_error
    assert expected in result.output


async def test_b_workspace_errors_keep_their_message() -> None:
    error = FileNotFoundInWorkspaceError("File not found: a.py (check the path with glob)", "a.py")
    result = await execute_tool_call(ToolRegistry.of([_tool(raises=error)]), "echo", {"file_path": "a"}, ENV)
    assert result.is_error
    assert result.output == "File not found: a.py (check the path with glob)"


async def test_b_unexpected_exceptions_become_short_error_results() -> None:
    result = await execute_tool_call(
        ToolRegistry.of([_tool(raises=RuntimeError("boom"))]), "echo", {"file_path": "a"}, ENV
    )
    assert result.is_error
    assert result.output == "Tool 'echo' failed: RuntimeError: boom"


async def test_tool_output_with_is_error_is_kept() -> None:
    tool = _tool(result=ToolOutput("exit 2", is_error=True))
    result = await execute_tool_call(ToolRegistry.of([tool]), "echo", {"file_path": "a"}, ENV)
    assert result.is_error and result.output == "exit 2"


async def test_5_1_result_truncated_but_full_output_kept() -> None:
    tool = _tool("write_file", result="w" * 5000)
    result = await execute_tool_call(ToolRegistry.of([tool]), "write_file", {"file_path": "a"}, ENV)
    assert result.truncated
    assert result.full_output == "w" * 5000
    assert result.full_output_chars == 5000
    assert result.output.startswith("[WARNING: Tool output was truncated. First 4000 characters")
    small = await execute_tool_call(
        ToolRegistry.of([tool]),
        "write_file",
        {"file_path": "a"},
        ENV,
        config=TruncationConfig(tool_output_limits={"write_file": 10_000}),
    )
    assert not small.truncated


async def test_policy_deny_stops_the_call_with_the_reason() -> None:
    calls: list[str] = []

    async def run(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
        calls.append("ran")
        return "ran"

    async def policy(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
        return Decision.deny(f"{call.arguments['file_path']} is protected")

    tool = RegisteredTool(ToolDefinition("echo", "d", SCHEMA), run)
    result = await execute_tool_call(ToolRegistry.of([tool]), "echo", {"file_path": ".env"}, ENV, policy=policy)
    assert result.is_error
    assert result.output == "Tool call 'echo' denied by policy: .env is protected"
    assert calls == []


async def test_policy_ask_without_approver_denies() -> None:
    async def policy(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
        return Decision.ask("writes outside src/")

    result = await execute_tool_call(ToolRegistry.of([_tool()]), "echo", {"file_path": "a"}, ENV, policy=policy)
    assert result.is_error
    assert "needs approval (writes outside src/) and nobody can answer here (no pending store)" in result.output


def _counting_tool(calls: list[dict[str, Any]]) -> RegisteredTool:
    async def run(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
        calls.append(args)
        return f"ran {args['file_path']} ({ctx.call_id})"

    return RegisteredTool(ToolDefinition("echo", "d", SCHEMA), run)


async def _ask(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
    return Decision.ask("writes outside src/", "test.rule")


async def test_policy_ask_without_waiting_holds_the_call_in_the_store_until_approved(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    registry = ToolRegistry.of([_counting_tool(calls)])
    pipeline = build_pipeline(registry, ENV, policy=_ask, pending=SqlitePendingStore(tmp_path / "p.db"), session="s1")
    held = await pipeline.run(PipelineCall("echo", {"file_path": "a"}, "c7"))
    assert held.is_error and calls == [] and held.pending is not None
    assert (held.pending.tool, held.pending.arguments, held.pending.call_id) == ("echo", {"file_path": "a"}, "c7")
    assert held.pending.decision == Decision.ask("writes outside src/", "test.rule")
    # Another process answers it; the keeper resumes it after a restart.
    SqlitePendingStore(tmp_path / "p.db").decide(held.pending.id, "approve", "alice")
    done = await pipeline.resume(held.pending.id)
    assert (done.is_error, done.output, done.call_id, done.pending) == (False, "ran a (c7)", "c7", None)
    assert calls == [{"file_path": "a"}]


async def test_a_denied_pending_call_never_runs(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    store = SqlitePendingStore(tmp_path / "p.db")
    pipeline = build_pipeline(ToolRegistry.of([_counting_tool(calls)]), ENV, policy=_ask, pending=store)
    held = await pipeline.run(PipelineCall("echo", {"file_path": "a"}))
    assert held.pending is not None
    store.decide(held.pending.id, "deny", "bob", "not there")
    refused = await pipeline.resume(held.pending.id)
    assert refused.is_error and refused.output == (
        "Tool call 'echo' was not approved (writes outside src/): denied by bob: not there.")
    assert calls == []


async def test_a_resumed_call_is_validated_again(tmp_path: Path) -> None:
    # What the store holds is read back from disk: a call tampered with there must not run.
    calls: list[dict[str, Any]] = []
    store = SqlitePendingStore(tmp_path / "p.db")
    tampered = store.add(PendingCall.raise_for(ToolCallRequest("echo", {"file_path": 3}), Decision.ask("x"),
                                               session="s", face="tool"))
    store.decide(tampered.id, "approve", "alice")
    pipeline = build_pipeline(ToolRegistry.of([_counting_tool(calls)]), ENV, pending=store, session="s")
    result = await pipeline.resume(tampered.id)
    assert result.is_error and "file_path" in result.output and calls == []


async def test_policy_that_raises_denies_instead_of_crashing() -> None:
    async def policy(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
        raise RuntimeError("db down")

    result = await execute_tool_call(ToolRegistry.of([_tool()]), "echo", {"file_path": "a"}, ENV, policy=policy)
    assert result.is_error and "policy check failed (db down)" in result.output


async def test_call_id_travels_to_the_result() -> None:
    result = await execute_tool_call(
        ToolRegistry.of([_tool()]), "echo", {"file_path": "a"}, ENV, ctx=ToolContext(call_id="c1")
    )
    assert result.call_id == "c1"


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.integers(), st.text(), st.booleans()))))
async def test_9_3_any_arguments_give_a_result_never_an_exception(arguments: Any) -> None:
    result = await execute_tool_call(ToolRegistry.of([_tool()]), "echo", arguments, ENV)
    assert result.is_error or result.output.startswith("echo:")


async def test_unknown_tool_error_names_the_equivalent_call(tmp_path) -> None:
    from codeloop.environments.local import LocalExecutionEnvironment
    from codeloop.profiles import create_profile
    from codeloop.tools import execute_tool_call

    registry = create_profile("openai").tool_registry
    env = LocalExecutionEnvironment(str(tmp_path))
    result = await execute_tool_call(registry, "delete_file", {"path": "old.txt"}, env)
    assert result.is_error
    assert result.output.endswith('To do that, call shell with arguments {"command": "rm -- old.txt"}.')


# -- EVENT and CHECKPOINT: the hooks every face may give --------------------------------------


class _Recorder:
    """An on_event sink and a checkpoint seam that write down what the pipeline did, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.checkpoint = self
        self.steps: list[object] = []

    def on_event(self, event: ToolEvent) -> None:
        # The typed events, written down as (kind, fields without the timing).
        if isinstance(event, ToolCallStarted):
            self.seen.append(("tool_call_start", {"tool_name": event.tool_name, "call_id": event.call_id,
                                                  "arguments": dict(event.arguments)}))
        elif isinstance(event, ToolCallEnded):
            text = {"error": event.error} if event.is_error else {"output": event.output}
            self.seen.append(("tool_call_end", {"call_id": event.call_id, "tool_name": event.tool_name, **text}))

    def before(self, call: ToolCallRequest, effects: frozenset[Effect], paths: tuple[str, ...] | None,
               step: int | str | None) -> None:
        self.seen.append(("before", call))
        self.steps.append((step, effects, paths))

    def after(self, call: ToolCallRequest, effects: frozenset[Effect], paths: tuple[str, ...] | None,
              step: int | str | None, outcome: ToolOutput) -> None:
        self.seen.append(("after", call.name))


async def test_events_bracket_the_call_with_the_full_output_and_checkpoint_around_execute() -> None:
    rec = _Recorder()

    async def run(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
        rec.seen.append(("execute", args["file_path"]))
        return "x" * 50

    registry = ToolRegistry.of([RegisteredTool(ToolDefinition("echo", "d", SCHEMA), run)])
    result = await execute_tool_call(registry, "echo", {"file_path": "a"}, ENV, ctx=ToolContext(call_id="c1"),
                                     config=TruncationConfig({"echo": 10}), on_event=rec.on_event,
                                     checkpoint=rec.checkpoint)
    assert result.truncated
    assert rec.seen == [
        ("tool_call_start", {"tool_name": "echo", "call_id": "c1", "arguments": {"file_path": "a"}}),
        ("before", ToolCallRequest("echo", {"file_path": "a"}, "c1")),  # undeclared: the widest
        ("execute", "a"),
        ("after", "echo"),
        ("tool_call_end", {"call_id": "c1", "tool_name": "echo", "output": "x" * 50}),
    ]


async def test_a_failed_call_ends_with_its_error_and_a_denied_one_reaches_no_checkpoint() -> None:
    rec = _Recorder()

    async def deny(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
        return Decision.deny("read-only")

    registry = ToolRegistry.of([_tool("echo", raises=FileNotFoundInWorkspaceError("File not found: a"))])
    await execute_tool_call(registry, "echo", {"file_path": "a"}, ENV, policy=deny, on_event=rec.on_event,
                            checkpoint=rec.checkpoint)
    await execute_tool_call(registry, "nope", "{bad", ENV, on_event=rec.on_event, checkpoint=rec.checkpoint)
    failed = await execute_tool_call(registry, "echo", {"file_path": "a"}, ENV, on_event=rec.on_event,
                                     checkpoint=rec.checkpoint)
    assert [kind for kind, _ in rec.seen] == ["tool_call_start", "tool_call_end", "tool_call_start",
                                              "tool_call_end", "tool_call_start", "before", "after",
                                              "tool_call_end"]
    assert rec.seen[1][1]["error"] == "Tool call 'echo' denied by policy: read-only"
    assert rec.seen[2][1]["arguments"] == {} and rec.seen[3][1]["error"].startswith("Unknown tool 'nope'")
    assert rec.seen[-1][1] == {"call_id": None, "tool_name": "echo", "error": failed.full_output}
    assert failed.full_output == "File not found: a"


async def test_a_checkpoint_that_raises_fails_the_call_without_running_it() -> None:
    calls: list[dict[str, Any]] = []

    class Broken(_Recorder):
        def before(self, *args: Any) -> None:
            raise RuntimeError("snapshot store unreadable")

    registry = ToolRegistry.of([_counting_tool(calls)])
    result = await execute_tool_call(registry, "echo", {"file_path": "a"}, ENV, checkpoint=Broken())
    assert result.is_error and calls == []
    assert result.output == "Tool 'echo' not run: its checkpoint failed (snapshot store unreadable)."


async def test_a_checkpoint_that_raises_after_the_call_ran_says_so_in_the_result() -> None:
    calls: list[dict[str, Any]] = []

    class Broken(_Recorder):
        def after(self, *args: Any) -> None:
            raise RuntimeError("manifest unwritable")

    registry = ToolRegistry.of([_counting_tool(calls)])
    result = await execute_tool_call(registry, "echo", {"file_path": "a"}, ENV, checkpoint=Broken())
    assert result.is_error and calls == [{"file_path": "a"}]
    assert result.output.endswith("(Tool 'echo' ran, but its checkpoint failed: manifest unwritable.)")


async def test_the_seam_sees_only_changing_calls_with_their_declaration_and_step(tmp_path: Path) -> None:
    rec = _Recorder()
    env = LocalExecutionEnvironment(str(tmp_path))
    registry = all_tools_registry()
    ctx = ToolContext(step=7)
    await execute_tool_call(registry, "read_file", {"file_path": "a.txt"}, env, ctx=ctx, checkpoint=rec)
    await execute_tool_call(registry, "grep", {"pattern": "x"}, env, ctx=ctx, checkpoint=rec)
    assert rec.seen == []  # reads pass the seam by
    patch = "*** Begin Patch\n*** Add File: n.txt\n+n\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+b\n*** End Patch"
    (tmp_path / "a.txt").write_text("a\n")
    await execute_tool_call(registry, "apply_patch", {"patch": patch}, env, ctx=ctx, checkpoint=rec)
    await execute_tool_call(registry, "shell", {"command": "rm n.txt"}, env, ctx=ctx, checkpoint=rec)
    assert [name for kind, name in rec.seen if kind == "after"] == ["apply_patch", "shell"]
    assert rec.steps == [(7, frozenset({Effect.READ, Effect.WRITE}), ("n.txt", "a.txt", "b.txt")),
                         (7, frozenset(Effect), None)]
    assert rec.seen[2][1].command == "rm n.txt" and not (tmp_path / "n.txt").exists()


async def test_a_resumed_call_has_its_events_and_checkpoint(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    rec = _Recorder()
    store = SqlitePendingStore(tmp_path / "p.db")
    registry = ToolRegistry.of([_counting_tool(calls)])
    pipeline = build_pipeline(registry, ENV, policy=_ask, pending=store, events=rec.on_event, checkpoint=rec.checkpoint)
    held = await pipeline.run(PipelineCall("echo", {"file_path": "a"}, "c9"))
    assert held.pending is not None
    store.decide(held.pending.id, "approve", "alice")
    rec.seen.clear()
    await pipeline.resume(held.pending.id)
    assert rec.seen == [
        ("tool_call_start", {"tool_name": "echo", "call_id": "c9", "arguments": {"file_path": "a"}}),
        ("before", ToolCallRequest("echo", {"file_path": "a"}, "c9")),
        ("after", "echo"),
        ("tool_call_end", {"call_id": "c9", "tool_name": "echo", "output": "ran a (c9)"}),
    ]


async def test_an_answered_call_does_not_run_but_is_announced_and_judged_first() -> None:
    calls: list[dict[str, Any]] = []
    rec = _Recorder()
    asked: list[ToolCallRequest] = []

    async def answer(call: ToolCallRequest) -> ToolOutput | None:
        asked.append(call)
        return ToolOutput("already done: a") if call.arguments["file_path"] == "a" else None

    async def deny_c(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
        return Decision.deny("no c") if call.arguments["file_path"] == "c" else Decision.allow()

    async def after(call: ToolCallRequest, output: ToolOutput) -> ToolOutput:
        rec.seen.append(("AFTER", call.arguments["file_path"]))
        return output

    registry = ToolRegistry.of([_counting_tool(calls)])
    done = await execute_tool_call(registry, "echo", {"file_path": "a"}, ENV, ctx=ToolContext(call_id="c1"),
                                   on_event=rec.on_event, checkpoint=rec.checkpoint, after=after, answer=answer,
                                   policy=deny_c)
    assert done.output == "already done: a" and not done.is_error and calls == []
    assert [kind for kind, _ in rec.seen] == ["tool_call_start", "tool_call_end"]  # no CHECKPOINT, no AFTER
    ran = await execute_tool_call(registry, "echo", {"file_path": "b"}, ENV, answer=answer, policy=deny_c)
    assert not ran.is_error and calls == [{"file_path": "b"}]
    denied = await execute_tool_call(registry, "echo", {"file_path": "c"}, ENV, answer=answer, policy=deny_c)
    assert denied.is_error and [c.arguments["file_path"] for c in asked] == ["a", "b"]  # POLICY comes first
