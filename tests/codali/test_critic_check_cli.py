"""The critic's check command is a pipeline call of the codali face (issue 30): it is
announced in the event stream like the builder's calls, black box through
``codeloop codali run --json`` against a loopback chat server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import test_cli_run
from .test_cli_run import BRIEF_TO_PASS, ScriptedChatServer, codeloop

server = test_cli_run.server  # the scripted chat server fixture


def _events(result_stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in result_stdout.splitlines()]


@pytest.mark.parametrize("server", [BRIEF_TO_PASS], indirect=True)
def test_the_check_command_is_an_evented_tool_call(repo: Path, _index_dir: Path, server: ScriptedChatServer) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    result = codeloop(["--task", "Make hash stronger", "--repo", str(repo), "--base-url", url, "--model", "m",
                       "--check", "test -s src/auth/hash.ts && echo checked > check.log", "--builder-tools", "native",
                       "--json"], _index_dir)
    assert result.returncode == 0, result.stderr
    events = _events(result.stdout)
    assert {"kind": "tool_call", "data": {"role": "critic", "name": "shell", "is_error": False}} in events
    assert (repo / "check.log").read_text() == "checked\n"
    critic_prompt = json.dumps(server.bodies[-1]["messages"])
    assert "check command passed: test -s src/auth/hash.ts" in critic_prompt


@pytest.mark.parametrize("server", [[*BRIEF_TO_PASS[:-1], {**BRIEF_TO_PASS[-1]}]], indirect=True)
def test_a_failing_check_is_an_error_call_and_fails_the_round(repo: Path, _index_dir: Path,
                                                              server: ScriptedChatServer) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    result = codeloop(["--task", "Make hash stronger", "--repo", str(repo), "--base-url", url, "--model", "m",
                       "--check", "echo broken >&2; exit 3", "--builder-tools", "native", "--max-rounds", "1",
                       "--json"], _index_dir)
    assert result.returncode == 1
    events = _events(result.stdout)
    assert {"kind": "tool_call", "data": {"role": "critic", "name": "shell", "is_error": True}} in events
    reasons = events[-1]["data"]["reasons"]  # type: ignore[index]
    assert any("check command failed (exit 3): echo broken >&2; exit 3" in r and "broken" in r for r in reasons)


async def test_the_face_policy_judges_the_check_command(repo: Path) -> None:
    """The check command passes the codali face's POLICY step like any call: a policy that
    refuses it keeps it from running, and the critic is told why."""
    from codeloop.codali.pipeline import PipelineConfig, RolesPipeline
    from codeloop.environments.base import ExecutionEnvironment
    from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response
    from codeloop.llm.client import Client
    from codeloop.policy.approval import ToolCallRequest
    from codeloop.policy.model import Decision

    judged: list[str] = []

    async def no_commands(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
        judged.append(call.name)
        return Decision.deny("no commands in this repository") if "command" in call.arguments else Decision.allow()

    adapter = ScriptedAdapter([text_response("Brief."), text_response("plan_targets:\n  - \"a.txt\"\n"),
                               text_response("Nothing to do."), text_response("Still nothing."),
                               text_response("status: PASS")])
    cfg = PipelineConfig.single("scripted-main", summarizer="scripted-cheap", max_rounds=1,
                                check_command="touch ran.txt")
    result = await RolesPipeline(Client({"scripted": adapter}), repo, cfg, policy=no_commands).run("task")
    assert not (repo / "ran.txt").exists()
    assert result.status == "FAIL" and result.critic is not None
    assert any("check command not run" in r and "no commands in this repository" in r for r in result.critic.reasons)
    assert "shell" in judged
