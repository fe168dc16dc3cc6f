"""codeloop.tools.hooks with real hook processes (the CLI's end-to-end tests: tests/cli/test_hooks_cli.py)."""

from __future__ import annotations

from pathlib import Path

from codeloop.policy.approval import ToolCallRequest
from codeloop.tools.effects import call_paths
from codeloop.tools.hooks import Hook, Hooks
from codeloop.tools.registry import ToolOutput
from codeloop.tools.sets import all_tools_registry

PATCH = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: ./b.py\n+z\n*** End Patch\n"


def test_call_paths_are_the_declared_paths_relative_to_the_workspace(tmp_path: Path) -> None:
    tools = all_tools_registry()
    assert call_paths(tools.request("apply_patch", {"patch": PATCH}), tmp_path) == ["src/a.py", "b.py"]
    assert call_paths(tools.request("write_file", {"file_path": str(tmp_path / "c" / "d.py")}), tmp_path) == ["c/d.py"]
    assert call_paths(tools.request("read_many_files", {"paths": ["x", 3]}), tmp_path) == ["x"]
    # A tool that cannot say (an MCP tool, shell) names no path, whatever its arguments look like.
    assert call_paths(tools.request("srv__t", {"path": 5, "file_path": "/elsewhere/e"}), tmp_path) == []
    assert call_paths(tools.request("shell", {"command": "cat src/a.py"}), tmp_path) == []
    hook = Hook("post_tool_call", "true", tools=["apply_*"], paths=["src/*.py"])
    assert hook.matches(tools.request("apply_patch", {"patch": PATCH}), tmp_path)
    assert not hook.matches(tools.request("write_file", {"file_path": "src/a.py"}), tmp_path)
    assert not hook.matches(tools.request("apply_patch", {"patch": PATCH.replace("src/a.py", "a.py")}), tmp_path)


async def test_only_pre_tool_call_reads_json_and_post_appends_text_with_secrets_redacted(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SERVICE_TOKEN", "s3cr3t-value-123")
    answer = '{"decision": "deny", "message": "m"}'
    hooks = Hooks([Hook("post_tool_call", f"echo '{answer}'"),
                   Hook("post_tool_call", "echo \"${SERVICE_TOKEN:-none}\" s3cr3t-value-123")], tmp_path)
    got = await hooks.after_call(ToolCallRequest("shell", {"command": "ls"}), ToolOutput("listing"), "sid", print)
    first, second = (h.command for h in hooks.hooks)
    assert got.text == (f"listing\n\n[post_tool_call hook `{first}`]\n{answer}"
                        f"\n\n[post_tool_call hook `{second}`]\nnone [REDACTED:SERVICE_TOKEN]")
    pre = Hooks([Hook("pre_tool_call", f"echo '{answer}'")], tmp_path)
    warnings: list[str] = []
    decision = await pre.policy(None, "sid", warnings.append)(ToolCallRequest("shell", {"command": "ls"}), None)  # type: ignore[arg-type]
    assert (decision.action, decision.reason, warnings) == ("deny", "m", [])
    bad = Hooks([Hook("pre_tool_call", "echo '{\"decision\": \"maybe\"}'", source="c.toml:3")], tmp_path)
    decision = await bad.policy(None, "sid", warnings.append)(ToolCallRequest("shell", {}), None)  # type: ignore[arg-type]
    assert decision.action == "ask" and "decision 'maybe'" in warnings[0] and "c.toml:3" in warnings[0]
