"""The critic's check command is a pipeline call of the codali face (issue 30): it is
announced in the event stream like the builder's calls, black box through
``codeloop codali run --json`` against a loopback chat server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_cli_run import BRIEF_TO_PASS, ScriptedChatServer, codeloop, server  # noqa: F401 - the fixture


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
