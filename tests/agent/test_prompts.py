"""System prompt layers (loop spec §6, DoD §9.8) as sent in real requests."""

from __future__ import annotations

import subprocess

import pytest

from codeloop.agent.config import SessionConfig
from codeloop.agent.project_docs import TRUNCATION_MARKER
from codeloop.agent.prompts import parse_git_snapshot
from codeloop.llm.adapters.scripted import text_response


async def system_prompt(harness, profile: str, config: SessionConfig | None = None, setup=None) -> str:
    h = harness(profile, [text_response("ok")], config)
    if setup:
        setup(h.root)
    await h.session.submit("hi")
    return h.adapter.requests[0].messages[0].text


def docs(root) -> None:
    (root / "AGENTS.md").write_text("agents-root-rule")
    (root / "CLAUDE.md").write_text("claude-rule")
    (root / "GEMINI.md").write_text("gemini-rule")
    (root / ".codex").mkdir()
    (root / ".codex" / "instructions.md").write_text("codex-rule")


@pytest.mark.parametrize(("profile", "own", "others"), [
    ("anthropic", "claude-rule", ["gemini-rule", "codex-rule"]),
    ("gemini", "gemini-rule", ["claude-rule", "codex-rule"]),
    ("openai", "codex-rule", ["claude-rule", "gemini-rule"]),
    ("text", None, ["claude-rule", "gemini-rule", "codex-rule"]),
])
async def test_9_8_only_relevant_project_files_are_loaded(harness, profile, own, others) -> None:
    prompt = await system_prompt(harness, profile, setup=docs)
    assert "agents-root-rule" in prompt  # AGENTS.md always
    if own:
        assert own in prompt
    for other in others:
        assert other not in prompt


async def test_9_8_layers_in_order_base_env_tools_docs_user(harness) -> None:
    config = SessionConfig(user_instructions="ALWAYS-ANSWER-IN-FRENCH")
    prompt = await system_prompt(harness, "anthropic", config, setup=docs)
    positions = [prompt.index(marker) for marker in (
        "You are codeloop", "<environment>", "# Tools", "agents-root-rule", "ALWAYS-ANSWER-IN-FRENCH")]
    assert positions == sorted(positions)
    assert prompt.rstrip().endswith("ALWAYS-ANSWER-IN-FRENCH")


@pytest.mark.parametrize(("profile", "topic"), [
    ("openai", "apply_patch"), ("anthropic", "old_string"), ("gemini", "GEMINI.md"), ("text", '<tool name="'),
])
async def test_9_8_provider_specific_base_instructions(harness, profile, topic) -> None:
    prompt = await system_prompt(harness, profile)
    assert topic in prompt
    assert "When the task is done" in prompt or "When done" in prompt


async def test_6_3_environment_block_fields(harness, tmp_path) -> None:
    prompt = await system_prompt(harness, "gemini")
    block = prompt[prompt.index("<environment>"):prompt.index("</environment>")]
    for field in ("Working directory: " + str(tmp_path), "Is git repository: false", "Platform: linux",
                  "OS version: ", "Today's date: ", "Model: gemini-2.5-pro", "Knowledge cutoff: "):
        assert field in block


async def test_6_4_git_snapshot_branch_counts_and_commits(harness) -> None:
    def repo(root) -> None:
        run = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True)  # noqa: E731
        run("init", "-q", "-b", "trunk")
        (root / "a.txt").write_text("a")
        run("add", "a.txt")
        run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first commit msg")
        (root / "a.txt").write_text("changed")
        (root / "new.txt").write_text("n")

    prompt = await system_prompt(harness, "anthropic", setup=repo)
    assert "Is git repository: true" in prompt and "Git branch: trunk" in prompt
    assert "Modified files: 1, untracked files: 1" in prompt
    assert "first commit msg" in prompt


def test_6_4_snapshot_parser_rejects_garbage() -> None:
    assert parse_git_snapshot("no markers") is None


async def test_6_5_deeper_docs_follow_root_and_budget_truncates(harness) -> None:
    def big(root) -> None:
        (root / "AGENTS.md").write_text("R" * 40_000)

    prompt = await system_prompt(harness, "anthropic", setup=big)
    assert TRUNCATION_MARKER in prompt and prompt.count("R") <= 32 * 1024 + 50


async def test_6_5_subdirectory_docs_are_appended_after_root(harness) -> None:
    h = harness("anthropic", [text_response("ok")])
    (h.root / "AGENTS.md").write_text("root-level")
    (h.root / "pkg").mkdir()
    (h.root / "pkg" / "AGENTS.md").write_text("pkg-level")
    h.session.working_subdir = "pkg"
    await h.session.submit("hi")
    prompt = h.adapter.requests[0].messages[0].text
    assert prompt.index("root-level") < prompt.index("pkg-level")


async def test_9_8_tool_descriptions_include_subagent_tools(harness) -> None:
    prompt = await system_prompt(harness, "text")
    for tool in ("write_file", "edit_file", "shell", "spawn_agent", "wait"):
        assert f"## {tool}:" in prompt
