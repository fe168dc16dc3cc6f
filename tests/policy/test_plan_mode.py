"""The plan-mode policy preset (issue 21) in the real tool pipeline: real registry, real
workspace, real files (the CLI side is tests/cli/test_plan_headless_cli.py)."""

from __future__ import annotations

from pathlib import Path

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.policy import Decision, ToolCallRequest
from codeloop.policy.plan_mode import plan_mode_policy
from codeloop.tools.pipeline import execute_tool_call
from codeloop.tools.sets import all_tools_registry


async def asks(call: ToolCallRequest, env: object) -> Decision:
    return Decision.ask(f"inner policy saw {call.name}")


async def test_writes_are_refused_before_they_touch_the_disk(tmp_path: Path) -> None:
    env = LocalExecutionEnvironment(tmp_path)
    policy = plan_mode_policy(None, shell_sandboxed=True)
    for name, args in (("write_file", {"file_path": "a.txt", "content": "x"}),
                       ("apply_patch", {"patch": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch"})):
        outcome = await execute_tool_call(all_tools_registry(), name, args, env, policy=policy)
        assert outcome.is_error and "plan mode is on" in outcome.output and "/go" in outcome.output
    assert list(tmp_path.iterdir()) == []


async def test_reads_go_to_the_wrapped_policy_and_run(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    env = LocalExecutionEnvironment(tmp_path)
    outcome = await execute_tool_call(all_tools_registry(), "read_file", {"file_path": "a.txt"}, env,
                                      policy=plan_mode_policy(None, shell_sandboxed=False))
    assert not outcome.is_error and "hello" in outcome.output
    decision = await plan_mode_policy(asks, shell_sandboxed=True)(all_tools_registry().request("grep", {}), env)
    assert decision.action == "ask" and "inner policy saw grep" in decision.reason


async def test_shell_needs_the_read_only_sandbox_and_mcp_tools_are_refused(tmp_path: Path) -> None:
    env = LocalExecutionEnvironment(tmp_path)
    touch = all_tools_registry().request("shell", {"command": "touch x"})
    assert (await plan_mode_policy(asks, shell_sandboxed=True)(touch, env)).action == "allow"
    refused = await plan_mode_policy(asks, shell_sandboxed=False)(touch, env)
    assert refused.action == "deny" and "bubblewrap cannot run here" in refused.reason
    mcp = await plan_mode_policy(None, shell_sandboxed=True)(ToolCallRequest("files__write", {}), env)
    assert mcp.action == "deny" and mcp.rule == "plan-mode"
