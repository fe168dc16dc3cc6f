"""shell, grep and glob (loop spec §3.3, §5.4)."""

from __future__ import annotations

import os
import time

from codeloop.tools import ToolRegistry, execute_tool_call
from codeloop.tools.sets import anthropic_tools, gemini_tools, openai_tools
from codeloop.tools.shell import shell_tool, timeout_message

from .workspace_fixture import Workspace


async def test_3_3_shell_output_exit_code_and_duration(ws: Workspace) -> None:
    result = await ws.call("shell", {"command": "echo hi; echo err >&2", "description": "say hi"})
    assert not result.is_error
    assert result.output.startswith("hi\nerr\n[exit code: 0, duration: ")


async def test_3_3_shell_non_zero_exit_is_an_error(ws: Workspace) -> None:
    result = await ws.call("shell", {"command": "exit 3"})
    assert result.is_error and "[exit code: 3," in result.output


async def test_5_4_timeout_message_verbatim(ws: Workspace) -> None:
    result = await ws.call("shell", {"command": "echo start; sleep 5", "timeout_ms": 300})
    assert result.is_error
    assert "start\n" in result.output
    assert (
        "[ERROR: Command timed out after 300ms. Partial output is shown above.\n"
        "You can retry with a longer timeout by setting the timeout_ms parameter.]"
    ) in result.output
    assert timeout_message(300) in result.output


async def test_3_3_grep_content_and_modes(ws: Workspace) -> None:
    ws.write("src/a.py", "def alpha():\n    return 1\n")
    ws.write("src/b.txt", "ALPHA\n")
    content = await ws.call("grep", {"pattern": "alpha", "glob_filter": "*.py"})
    assert "src/a.py:1:def alpha():" in content.output
    assert "b.txt" not in content.output
    insensitive = await ws.call(
        "grep", {"pattern": "alpha", "case_insensitive": True, "output_mode": "files_with_matches"}
    )
    assert sorted(insensitive.output.splitlines()) == ["src/a.py", "src/b.txt"]
    counted = await ws.call("grep", {"pattern": "alpha|return", "output_mode": "count", "path": "src/a.py"})
    assert "2" in counted.output


async def test_3_3_grep_no_matches_is_not_an_error(ws: Workspace) -> None:
    ws.write("a.txt", "x\n")
    result = await ws.call("grep", {"pattern": "zzz"})
    assert not result.is_error and result.output == "No matches found for pattern 'zzz'."


async def test_3_3_glob_sorted_newest_first(ws: Workspace) -> None:
    old = ws.write("old.py", "x")
    new = ws.write("sub/new.py", "y")
    now = time.time()
    os.utime(old, (now - 100, now - 100))
    os.utime(new, (now, now))
    result = await ws.call("glob", {"pattern": "**/*.py"})
    assert result.output.splitlines() == ["sub/new.py", "old.py"]


def test_3_4_to_3_6_profile_tool_lists_and_shell_timeouts() -> None:
    assert [t.name for t in openai_tools()] == ["read_file", "apply_patch", "write_file", "shell", "grep", "glob"]
    assert [t.name for t in anthropic_tools()] == ["read_file", "write_file", "edit_file", "shell", "grep", "glob"]
    assert {"read_many_files", "list_dir", "edit_file"} <= {t.name for t in gemini_tools()}
    shell_of = {t.name: t for t in anthropic_tools()}["shell"]
    assert "120000 ms" in shell_of.definition.description
    assert "10000 ms" in {t.name: t for t in openai_tools()}["shell"].definition.description


async def test_5_4_profile_default_timeout_applies_when_timeout_ms_is_absent(ws: Workspace) -> None:
    registry = ToolRegistry.of([shell_tool(default_timeout_ms=250)])
    result = await execute_tool_call(registry, "shell", {"command": "sleep 5"}, ws.env)
    assert result.is_error
    assert "timed out after 250ms" in result.output


async def test_3_4_apply_patch_heredoc_in_shell_applies_the_patch(ws: Workspace) -> None:
    ws.write("a.txt", "old\n")
    command = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\nEOF\n"
    result = await ws.call("shell", {"command": command})
    assert not result.is_error, result.output
    assert result.output.startswith("Success. Updated the following files:\nM a.txt\n")
    assert ws.read("a.txt") == b"new\n"
    failed = await ws.call("shell", {"command": command})
    assert failed.is_error and "Failed to find expected lines in a.txt" in failed.output
