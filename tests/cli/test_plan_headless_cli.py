"""Plan mode and headless CI use of ``codeloop run`` (issue 21), end to end: the real command
against the loopback scripted model server (tests/cli/chat_server.py); the chat parts in a
real terminal (tmux, as tests/cli/test_interactive_tmux.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from chat_server import ChatServer, error_reply, text_reply, tool_reply
from test_interactive_tmux import launch, sent
from test_run_cli import CODELOOP, isolated_env, run
from test_run_sessions_cli import fake_bwrap_path

from codeloop.environments.sandbox import probe_bwrap

NATIVE = ["--profile", "anthropic", "--approval", "never-ask", "--sandbox", "off"]


def tool_results(server: ChatServer, index: int) -> list[str]:
    """The tool results the model was sent in request ``index``."""
    return [str(m["content"]) for m in server.requests[index]["messages"] if m["role"] == "tool"]


def test_plan_one_shot_refuses_a_write_in_text_tool_mode_and_shows_the_plan(server, workspace) -> None:
    # The default profile for an OpenAI-compatible server is the text one (small local models).
    server.replies.extend([
        text_reply('<tool name="write_file">\n<file_path>hello.py</file_path>\n<content>\nprint(1)\n'
                   '</content>\n</tool>'),
        text_reply("1. Create hello.py printing 1."),
    ])
    done = run(["add hello.py", "--plan", "--base-url", server.base_url, "--approval", "never-ask",
                "--sandbox", "off"], workspace)
    assert done.returncode == 0, done.stderr
    assert not (workspace / "hello.py").exists()
    assert "PLAN MODE is on" in server.requests[0]["messages"][0]["content"]
    refusal = json.dumps(server.requests[1]["messages"][-1])
    assert "plan mode is on" in refusal and "/go" in refusal
    assert "1. Create hello.py printing 1." in done.stdout
    assert "nothing was changed" in done.stderr and "--resume" in done.stderr


def test_no_plan_flag_overrides_config_mode_plan(server, workspace) -> None:
    (workspace / ".codeloop").mkdir()
    (workspace / ".codeloop" / "config.toml").write_text('mode = "plan"\n')
    server.replies.extend([tool_reply("write_file", {"file_path": "a.txt", "content": "a\n"}), text_reply("plan")])
    done = run(["write a.txt", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    assert not (workspace / "a.txt").exists() and "plan mode is on" in tool_results(server, 1)[0]
    server.replies.extend([tool_reply("write_file", {"file_path": "a.txt", "content": "a\n"}), text_reply("done")])
    done = run(["write a.txt", "--no-plan", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "a.txt").read_text() == "a\n"


def test_bad_config_mode_is_a_clear_error(workspace) -> None:
    (workspace / ".codeloop").mkdir()
    (workspace / ".codeloop" / "config.toml").write_text('mode = "planning"\n')
    done = run(["x"], workspace)
    assert done.returncode == 2 and "config.toml:1: mode = 'planning' is not one of normal, plan" in done.stderr
    assert "Traceback" not in done.stderr


def test_plan_mode_runs_shell_in_a_read_only_sandbox(server, workspace) -> None:
    if (why := probe_bwrap()) is not None:
        pytest.skip(f"bubblewrap cannot run here: {why}")
    (workspace / "notes.txt").write_text("readable\n")
    server.replies.extend([tool_reply("shell", {"command": "cat notes.txt; touch x"}), text_reply("plan")])
    done = run(["look", "--plan", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    result = tool_results(server, 1)[0]
    assert "readable" in result and "Read-only file system" in result
    assert not (workspace / "x").exists()


def test_plan_mode_without_bubblewrap_refuses_shell(server, tmp_path, workspace) -> None:
    server.replies.extend([tool_reply("shell", {"command": "touch x"}), text_reply("plan")])
    done = run(["look", "--plan", "--json", "--base-url", server.base_url, *NATIVE], workspace,
               env=isolated_env(workspace, PATH=fake_bwrap_path(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert "shell is refused in plan mode" in done.stderr
    result = tool_results(server, 1)[0]
    assert "bubblewrap cannot run here, so shell is refused altogether" in result
    assert not (workspace / "x").exists()


def test_output_last_message_holds_the_final_answer(server, tmp_path, workspace) -> None:
    out = tmp_path / "answer.md"
    server.replies.extend([tool_reply("shell", {"command": "echo hi"}), text_reply("Final: all good.")])
    done = run(["q", "--json", "--output-last-message", str(out), "--base-url", server.base_url, *NATIVE],
               workspace)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "Final: all good."
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".answer.md")] == []  # no temp file left


def test_output_last_message_on_failure_keeps_what_there_is(server, tmp_path, workspace) -> None:
    out = tmp_path / "answer.md"
    out.write_text("stale answer of an earlier run")
    partial = tool_reply("shell", {"command": "echo hi"})
    partial["content"] = "Looking at the tests first."
    server.replies.extend([partial, error_reply(401, "invalid api key")])
    done = run(["q", "--quiet", "--output-last-message", str(out), "--base-url", server.base_url, *NATIVE],
               workspace)
    assert done.returncode == 1
    assert out.read_text() == "Looking at the tests first."
    server.replies.append(error_reply(401, "invalid api key"))
    done = run(["q", "--output-last-message", str(out), "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 1 and out.read_text() == ""  # no message at all: an empty file, not the old one


def test_output_last_message_in_a_missing_directory_is_a_usage_error(tmp_path, workspace) -> None:
    done = run(["q", "--output-last-message", str(tmp_path / "nope" / "a.md")], workspace)
    assert done.returncode == 2 and "does not exist: create it first" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("stdin", ["devnull", "pipe"])
def test_without_a_terminal_a_call_needing_approval_is_denied_with_exit_4(server, workspace, stdin) -> None:
    server.replies.extend([tool_reply("shell", {"command": "touch made.txt"}), text_reply("could not")])
    args = [CODELOOP, "run", "make it", "--cwd", str(workspace), "--base-url", server.base_url,
            "--profile", "anthropic", "--sandbox", "off", "--approval", "on-risk"]
    # A pipe holding "y" must not answer the question: only a terminal can approve.
    feed = {"stdin": subprocess.DEVNULL} if stdin == "devnull" else {"input": "y\nalways\n"}
    done = subprocess.run(args, capture_output=True, text=True, env=isolated_env(workspace), timeout=60, **feed)
    assert done.returncode == 4, done.stderr
    assert not (workspace / "made.txt").exists()
    assert "no terminal to ask for approval" in done.stderr and "--approval never-ask" in done.stderr
    assert "no terminal to ask for approval" in tool_results(server, 1)[0]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_chat_plan_refuses_a_write_and_go_runs_the_plan(server: ChatServer, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    server.replies.extend([
        tool_reply("write_file", {"file_path": "plan.txt", "content": "x\n"}), text_reply("1. Write plan.txt."),
        tool_reply("write_file", {"file_path": "plan.txt", "content": "x\n"}), text_reply("Wrote it."),
        text_reply("1. Write b.txt."),
        tool_reply("write_file", {"file_path": "b.txt", "content": "b\n"}), text_reply("Wrote b."),
    ])
    pane = launch(server, tmp_path, "--approval", "never-ask")
    try:
        pane.wait_for("Ctrl-C aborts")
        pane.type_line("/plan")
        pane.wait_for("plan mode on")
        pane.type_line("make plan.txt")
        pane.wait_for("/go runs this plan")
        assert not (workspace / "plan.txt").exists()
        assert "plan mode is on" in sent(server, 1) and "PLAN MODE is on" in sent(server, 0)
        pane.type_line("/go")
        pane.wait_for("Wrote it.")
        assert (workspace / "plan.txt").read_text() == "x\n"
        assert "carry out this plan" in sent(server, 2) and "1. Write plan.txt." in sent(server, 2)
        assert "PLAN MODE" not in server.requests[2]["messages"][0]["content"]
        pane.type_line("/plan and another file")  # switches, and sends the rest in plan mode
        pane.wait_for("/go runs this plan", count=2)
        pane.type_line("/go 1. Write b.txt containing b.")  # the user's edited plan
        pane.wait_for("Wrote b.")
        assert (workspace / "b.txt").read_text() == "b\n"
        assert "and another file" in sent(server, 4) and "PLAN MODE is on" in sent(server, 4)
        assert "1. Write b.txt containing b." in sent(server, 5)
        pane.wait_for("›", count=6)  # the turn is over: typed earlier, /exit would steer it (seen under load)
        pane.type_line("/exit")
        pane.wait_for("EXITED=0")
    finally:
        pane.close()
