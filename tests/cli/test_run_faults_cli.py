"""``codeloop run`` survives a busy provider (issue 23): the real command against the
loopback fault server (tests/cli/fault_server.py) over OpenAI Responses, Anthropic Messages
and Chat Completions, which answers 429, then 503, then resets the connection, then works."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
from chat_server import text_reply, tool_reply
from fault_server import RESET, FaultServer, cut, status
from test_run_cli import CODELOOP, SCHEMA, isolated_env

pytestmark = pytest.mark.slow

APIS = {
    # provider flag, base URL suffix, key variable
    "responses": ("openai", "/v1", "OPENAI_API_KEY"),
    "anthropic": ("anthropic", "", "ANTHROPIC_API_KEY"),
    "chat_completions": ("openai_compatible", "/v1", "OPENAI_API_KEY"),
}


def run(server: FaultServer, api: str, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    provider, suffix, key = APIS[api]
    args = [CODELOOP, "run", "append a line to log.txt", "--cwd", str(cwd), "--provider", provider,
            "--base-url", server.base_url + suffix, "--approval", "never-ask", "--sandbox", "off", *extra]
    if api != "chat_completions":
        args += ["--profile", provider]
    return subprocess.run(args, capture_output=True, text=True, env=isolated_env(cwd, **{key: "test-key"}),
                          timeout=120, stdin=subprocess.DEVNULL)


def script(server: FaultServer) -> None:
    server.replies.extend([tool_reply("shell", {"command": "echo ran >> log.txt"}), text_reply("Appended.")])


@pytest.mark.parametrize("api", sorted(APIS))
def test_429_then_503_then_reset_then_the_task_finishes(api: str, tmp_path: Path) -> None:
    with FaultServer() as server:
        server.faults.extend([status(429, {"retry-after": "1"}), status(503), RESET])
        script(server)
        done = run(server, api, tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    for event in events:
        jsonschema.validate(event, SCHEMA)
    retries = [e["data"] for e in events if e["kind"] == "retry"]
    assert [(r["attempt"], r["error_type"]) for r in retries] == [
        (1, "RateLimitError"), (2, "ServerError"), (3, retries[2]["error_type"])]
    assert retries[2]["error_type"] in ("NetworkError", "StreamError")
    assert retries[0]["wait"] == 1.0  # the provider's retry-after, not the backoff
    assert retries[0]["cause"] == "rate limited" and retries[1]["cause"] == "server error (HTTP 503)"
    assert not any(r["discard_deltas"] for r in retries)
    assert [r[1] for r in server.requests] == ["status 429", "status 503", "reset", "ok", "ok"]
    assert (tmp_path / "log.txt").read_text() == "ran\n"
    assert events[-1]["data"]["reason"] == "closed" and events[-2]["data"]["reason"] == "completed"


def test_a_stream_cut_after_text_is_asked_again_and_the_tool_runs_once(tmp_path: Path) -> None:
    with FaultServer() as server:
        server.faults.append(cut(3))  # the first reply breaks after some of its text was shown
        server.replies.append(tool_reply("shell", {"command": "echo ran >> log.txt"}) | {"content": "I will append."})
        server.replies.append(tool_reply("shell", {"command": "echo ran >> log.txt"}) | {"content": "I will append."})
        server.replies.append(text_reply("Appended."))
        done = run(server, "anthropic", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "the reply stream broke, retrying in" in done.stderr and "(1/6)" in done.stderr
    assert "the partial reply above is discarded" in done.stderr
    assert (tmp_path / "log.txt").read_text() == "ran\n"
    assert [r[1] for r in server.requests] == ["cut after 3", "ok", "ok"]


def test_rate_limit_is_shown_on_the_terminal_and_max_retries_bounds_it(tmp_path: Path) -> None:
    with FaultServer() as server:
        server.faults.extend([status(429, {"retry-after": "0"})] * 3)
        script(server)
        done = run(server, "chat_completions", tmp_path, "--max-retries", "2")
    assert done.returncode == 1
    assert "rate limited, retrying in 0 s (1/2)" in done.stderr and "(2/2)" in done.stderr
    assert "injected 429" in done.stderr and "Traceback" not in done.stderr
    assert len(server.requests) == 3 and not (tmp_path / "log.txt").exists()


def test_a_retry_after_beyond_the_max_delay_is_reported_not_waited(tmp_path: Path) -> None:
    with FaultServer() as server:
        server.faults.append(status(529, {"retry-after": "3600"}))
        script(server)
        done = run(server, "anthropic", tmp_path)
    assert done.returncode == 1
    assert "provider overloaded (HTTP 529): the provider asks to wait 3600 s" in done.stderr
    assert len(server.requests) == 1


@pytest.mark.parametrize("code", [400, 401, 403, 404])
def test_client_errors_are_never_retried(code: int, tmp_path: Path) -> None:
    with FaultServer() as server:
        server.faults.append(status(code))
        script(server)
        done = run(server, "responses", tmp_path, "--json")
    assert done.returncode == 1
    assert not [line for line in done.stdout.splitlines() if json.loads(line)["kind"] == "retry"]
    assert len(server.requests) == 1


def test_max_retries_from_the_config_file_and_a_bad_value_is_named(tmp_path: Path) -> None:
    config = tmp_path / ".codeloop" / "config.toml"
    config.parent.mkdir()
    config.write_text("max_retries = 1\n")
    with FaultServer() as server:
        server.faults.extend([status(503, {"retry-after": "0"})] * 2)
        script(server)
        done = run(server, "chat_completions", tmp_path)
    assert done.returncode == 1 and "(1/1)" in done.stderr and len(server.requests) == 2
    config.write_text("max_retries = -1\n")
    done = run(server, "chat_completions", tmp_path)
    assert done.returncode == 2 and "max_retries must be a whole number from 0 to 100" in done.stderr
