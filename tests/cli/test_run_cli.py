"""``codeloop run`` end to end: the real command against a real loopback
OpenAI-compatible server (tests/cli/chat_server.py) serving scripted replies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from chat_server import error_reply, text_reply, tool_reply

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "events.schema.json").read_text())
CODELOOP = str(Path(sys.executable).parent / "codeloop")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.endswith(("_API_KEY", "_BASE_URL")) and k not in ("GOOGLE_API_KEY",)}
    env.update(extra)
    return env


def isolated_env(cwd: Path, **extra: str) -> dict[str, str]:
    """clean_env with session logs and the user config beside the workspace (never the real ones)."""
    return clean_env(CODELOOP_STATE_DIR=str(cwd.parent / "state"), CODELOOP_CONFIG_DIR=str(cwd.parent / "userconf"),
                     **extra)


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CODELOOP, "run", *args, "--cwd", str(cwd)], capture_output=True, text=True,
                          env=env or isolated_env(cwd), timeout=60, stdin=subprocess.DEVNULL)


def test_json_output_is_one_schema_valid_event_per_line(server, tmp_path) -> None:
    server.replies.extend([
        text_reply('<tool name="write_file">\n<file_path>hello.py</file_path>\n<content>\nprint("Hello")\n'
                   '</content>\n</tool>'),
        text_reply("Created hello.py."),
    ])
    done = run(["Create hello.py", "--json", "--base-url", server.base_url, "--approval", "never-ask",
                "--sandbox", "off"], tmp_path)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    for event in events:
        jsonschema.validate(event, SCHEMA)
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "session_start" and kinds[-1] == "session_end"
    assert events[-1]["data"]["state"] == "closed"
    assert "tool_call_end" in kinds and "assistant_text_delta" in kinds
    assert len({e["session_id"] for e in events}) == 1
    assert (tmp_path / "hello.py").read_text() == 'print("Hello")\n'
    assert server.requests[0].get("tools") is None  # the text profile teaches tools in the prompt
    system = server.requests[0]["messages"][0]["content"]
    # Its small window gets the core tools only: no subagent tools to describe.
    assert "## read_file" in system and "spawn_agent" not in system


def test_native_tool_calls_with_anthropic_profile_and_rich_output(server, tmp_path) -> None:
    server.replies.extend([tool_reply("shell", {"command": "echo from-shell"}), text_reply("All done.")])
    done = run(["say hi", "--base-url", server.base_url, "--profile", "anthropic", "--approval", "never-ask",
                "--sandbox", "off"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "shell" in done.stdout and "from-shell" in done.stdout and "All done." in done.stdout
    assert [t["function"]["name"] for t in server.requests[0]["tools"]][:1] == ["read_file"]


def test_quiet_prints_only_the_final_answer(server, tmp_path) -> None:
    server.replies.extend([tool_reply("shell", {"command": "echo noisy"}), text_reply("The answer is 42.")])
    done = run(["q", "--quiet", "--base-url", server.base_url, "--profile", "anthropic", "--approval", "never-ask",
                "--sandbox", "off"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The answer is 42.\n"


def test_turn_limit_exit_code_3(server, tmp_path) -> None:
    server.replies.extend([tool_reply("shell", {"command": "true"}), tool_reply("shell", {"command": "true"})])
    done = run(["loop", "--json", "--max-turns", "2", "--base-url", server.base_url, "--profile", "anthropic",
                "--approval", "never-ask", "--sandbox", "off"], tmp_path)
    assert done.returncode == 3
    assert any(json.loads(line)["kind"] == "turn_limit" for line in done.stdout.splitlines())


def test_provider_auth_error_exit_1_with_message_on_stderr(server, tmp_path) -> None:
    server.replies.append(error_reply(401, "invalid api key"))
    done = run(["x", "--json", "--base-url", server.base_url, "--sandbox", "off"], tmp_path)
    assert done.returncode == 1
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-2]["kind"] == "error" and events[-2]["data"]["error_type"] == "AuthenticationError"
    assert "invalid api key" in done.stderr and "Traceback" not in done.stderr


def test_auth_and_unknown_model_errors_say_what_to_fix(server, tmp_path) -> None:
    server.replies.append(error_reply(401, "invalid api key"))
    done = run(["x", "--base-url", server.base_url, "--sandbox", "off"], tmp_path)
    assert done.returncode == 1 and "fix: set a valid key in OPENAI_API_KEY, or check --base-url" in done.stderr
    server.replies.append(error_reply(404, "model 'gpt-9' not found"))
    done = run(["x", "--base-url", server.base_url, "--model", "gpt-9", "--sandbox", "off"], tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "model 'gpt-9' or its endpoint was not found" in done.stderr
    assert "fix: pass a model this provider serves with --model ID" in done.stderr


def test_on_risk_without_terminal_refuses_risky_command_and_says_how(server, tmp_path) -> None:
    server.replies.extend([tool_reply("shell", {"command": "rm -rf build"}), text_reply("ok")])
    (tmp_path / "build").mkdir()
    done = run(["clean", "--json", "--base-url", server.base_url, "--profile", "anthropic", "--sandbox", "off"],
               tmp_path)
    assert done.returncode == 4, done.stderr  # completed, but a call was not approved
    end = next(json.loads(x) for x in done.stdout.splitlines() if json.loads(x)["kind"] == "tool_call_end")
    assert "approval" in end["data"]["error"] and (tmp_path / "build").is_dir()


def test_missing_key_names_the_variable(tmp_path) -> None:
    done = run(["x", "--provider", "anthropic"], tmp_path)
    assert done.returncode == 2 and "ANTHROPIC_API_KEY" in done.stderr and done.stdout == ""


@pytest.mark.parametrize(("args", "needle"), [
    (["--sandbox", "none"], "--sandbox"),
    (["--approval", "maybe"], "--approval"),
    (["--profile", "mistral"], "--profile"),
    (["--provider", "acme"], "--provider"),
])
def test_bad_options_give_one_line_errors(tmp_path, args, needle) -> None:
    done = run(["x", *args], tmp_path)
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr


def test_missing_workspace_is_a_clear_error(tmp_path) -> None:
    done = run(["x"], tmp_path / "nope")
    assert done.returncode == 2 and "is not a directory" in done.stderr


def test_help_has_example() -> None:
    done = subprocess.run([CODELOOP, "run", "--help"], capture_output=True, text=True, timeout=30)
    assert "Example:" in done.stdout


def test_default_sandbox_runs_commands_in_bubblewrap_inside_workspace(server, tmp_path) -> None:
    from codeloop.environments.sandbox import probe_bwrap

    if (why := probe_bwrap()) is not None:
        pytest.skip(f"bubblewrap cannot run here: {why}")
    server.replies.extend([tool_reply("shell", {"command": "echo made > inside.txt; touch /outside.txt"}),
                           text_reply("ok")])
    done = run(["write", "--json", "--base-url", server.base_url, "--profile", "anthropic",
                "--approval", "never-ask"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "inside.txt").read_text() == "made\n"
    assert not Path("/outside.txt").exists()


@pytest.mark.e2e
def test_e2e_without_api_key_uses_local_llama_cpp_model(tmp_path) -> None:
    """No key set: `codeloop run` starts the local llama.cpp server and runs the text profile.
    Checks the wiring (schema-valid events, a completed or limited session), not the answer."""
    from codeloop.llm.llama_install import server_binary, weights_path

    if server_binary() is None or weights_path("0.5b") is None:
        pytest.skip("local llama.cpp model not installed (python -m codeloop.llm.llama_server install 0.5b)")
    done = subprocess.run([CODELOOP, "run", "Reply with the single word OK.", "--json", "--model", "0.5b",
                           "--max-turns", "4", "--sandbox", "off", "--approval", "never-ask", "--cwd", str(tmp_path)],
                          capture_output=True, text=True, env=clean_env(), timeout=900, stdin=subprocess.DEVNULL)
    assert done.returncode in (0, 3), done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    for event in events:
        jsonschema.validate(event, SCHEMA)
    assert events[0]["data"]["profile"] == "text" and events[0]["data"]["model"] == "qwen2.5-coder-0.5b-instruct"  # the served id, not the alias
    assert any(e["kind"] == "assistant_text_end" for e in events)
