"""Provider profiles (loop spec §3, DoD §9.2) and issue 10's compact prompt."""

from __future__ import annotations

import pytest

from codeloop.llm.types import ToolDefinition
from codeloop.profiles import PROFILE_IDS, create_profile
from codeloop.tools import RegisteredTool


def test_9_2_openai_profile_is_codex_aligned() -> None:
    p = create_profile("openai")
    assert p.tool_registry.names() == ["read_file", "apply_patch", "write_file", "shell", "grep", "glob"]
    shell = p.tool_registry.get("shell")
    assert shell is not None and "10000 ms" in shell.definition.description
    assert p.supports_parallel_tool_calls


def test_9_2_anthropic_profile_is_claude_code_aligned() -> None:
    p = create_profile("anthropic", beta_headers=["interleaved-thinking-2025-05-14"])
    edit = p.tool_registry.get("edit_file")
    assert edit is not None and {"old_string", "new_string"} <= set(edit.definition.parameters["properties"])
    assert "apply_patch" not in p.tool_registry
    assert "120000 ms" in p.tool_registry.get("shell").definition.description
    assert p.provider_options() == {"anthropic": {"beta_headers": ["interleaved-thinking-2025-05-14"]}}


def test_9_2_gemini_profile_is_gemini_cli_aligned() -> None:
    p = create_profile("gemini")
    assert {"read_many_files", "list_dir", "edit_file"} <= set(p.tool_registry.names())
    assert "10000 ms" in p.tool_registry.get("shell").definition.description


def test_text_profile_sends_no_native_tools_and_teaches_syntax() -> None:
    p = create_profile("text")
    assert not p.native_tool_calls and p.tool_call_recovery
    prompt = p.build_system_prompt("", "")
    assert '<tool name="write_file">' in prompt and "<file_path> string, required" in prompt


@pytest.mark.parametrize("profile_id", PROFILE_IDS)
def test_9_2_custom_tool_registers_and_latest_wins(profile_id: str) -> None:
    p = create_profile(profile_id)

    async def run_tests(args, env, ctx) -> str:
        return "ok"

    custom = RegisteredTool(ToolDefinition("shell", "My shell", {"type": "object", "properties": {}}), run_tests)
    extra = RegisteredTool(ToolDefinition("run_tests", "Run tests", {"type": "object", "properties": {}}), run_tests)
    p.tool_registry.register(custom)
    p.tool_registry.register(extra)
    assert p.tool_registry.get("shell") is custom
    assert [t.description for t in p.tools() if t.name == "shell"] == ["My shell"]
    assert "run_tests" in [t.name for t in p.tools()]


def test_compact_prompt_for_small_windows_is_much_shorter() -> None:
    small = create_profile("text", context_window_size=8_192)
    large = create_profile("text", context_window_size=32_768)
    assert small.compact and not large.compact
    assert len(small.build_system_prompt("", "")) < 0.7 * len(large.build_system_prompt("", ""))


def test_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="openai, anthropic, gemini, text"):
        create_profile("mistral")
