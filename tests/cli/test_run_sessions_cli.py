"""``codeloop run`` wiring of issue 9 end to end: the real command against the loopback
chat-completions server (tests/cli/chat_server.py): session logs with --resume/--continue,
config files, approvals without a terminal, MCP servers from config, --network and the
bubblewrap fallback."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from chat_server import text_reply, tool_reply
from test_run_cli import CODELOOP, isolated_env, run

MCP_SERVER = str(Path(__file__).parents[1] / "mcp" / "server_app.py")


def session_id(stderr: str) -> str:
    found = re.search(r"session (\S+)\s+\(continue: codeloop run --resume", stderr)
    assert found, stderr
    return found.group(1)


def tool_end(stdout: str) -> dict:
    return next(e for e in map(json.loads, stdout.splitlines()) if e["kind"] == "tool_call_end")["data"]


BASE = ["--profile", "anthropic", "--approval", "never-ask", "--sandbox", "off"]


def test_resume_sends_the_earlier_conversation_and_continues_the_same_log(server, workspace) -> None:
    server.replies.extend([text_reply("Noted: the codeword is PELICAN."), text_reply("It was PELICAN.")])
    first = run(["remember the codeword PELICAN", "--base-url", server.base_url, *BASE], workspace)
    assert first.returncode == 0, first.stderr
    sid = session_id(first.stderr)
    second = run(["what was the codeword?", "--resume", sid, "--base-url", server.base_url, *BASE], workspace)
    assert second.returncode == 0, second.stderr
    sent = json.dumps(server.requests[1]["messages"])
    assert "remember the codeword PELICAN" in sent and "Noted: the codeword is PELICAN." in sent
    assert "what was the codeword?" in sent
    assert session_id(second.stderr) == sid


def test_continue_resumes_the_latest_session_of_the_workspace(server, workspace) -> None:
    server.replies.extend([text_reply("one"), text_reply("two"), text_reply("three")])
    run(["first task", "--base-url", server.base_url, *BASE], workspace)
    latest = run(["second task", "--base-url", server.base_url, *BASE], workspace)
    done = run(["third task", "--continue", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 0, done.stderr
    sent = json.dumps(server.requests[2]["messages"])
    assert "second task" in sent and "first task" not in sent
    assert session_id(done.stderr) == session_id(latest.stderr)


def test_continue_without_a_session_is_a_clear_error(workspace) -> None:
    done = run(["x", "--continue"], workspace)
    assert done.returncode == 2 and "no earlier session" in done.stderr and "Traceback" not in done.stderr


def test_resume_unknown_id_is_a_clear_error(server, workspace) -> None:
    done = run(["x", "--resume", "0123456789abcdef", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 2 and "0123456789abcdef" in done.stderr and "Traceback" not in done.stderr


def write_configs(workspace: Path, project: str, user: str = "") -> None:
    (workspace / ".codeloop").mkdir(exist_ok=True)
    (workspace / ".codeloop" / "config.toml").write_text(project)
    (workspace.parent / "userconf").mkdir(exist_ok=True)
    (workspace.parent / "userconf" / "config.toml").write_text(user)


def trust_project(workspace: Path) -> str:
    """``codeloop trust WORKSPACE --yes``: the project's base_url, sandbox and MCP servers apply."""
    trusted = subprocess.run([CODELOOP, "trust", str(workspace), "--yes"], capture_output=True, text=True,
                             env=isolated_env(workspace), timeout=60)
    assert trusted.returncode == 0, trusted.stderr
    return trusted.stdout


def test_config_files_supply_options_and_project_beats_user(server, workspace) -> None:
    write_configs(workspace,
                  f'base_url = "{server.base_url}"\nmodel = "project-model"\nsandbox = "off"\n',
                  'model = "user-model"\nprofile = "anthropic"\napproval = "never-ask"\n')
    assert "base_url" in trust_project(workspace)
    server.replies.extend([tool_reply("shell", {"command": "echo made > out.txt"}), text_reply("done")])
    done = run(["make out.txt"], workspace)
    assert done.returncode == 0, done.stderr
    assert server.requests[0]["model"] == "project-model"
    assert server.requests[0]["tools"]  # profile = "anthropic" from the user file: native tools
    assert (workspace / "out.txt").read_text() == "made\n"  # approval = never-ask from the user file


def test_untrusted_project_config_is_ignored_with_a_warning(server, workspace) -> None:
    write_configs(workspace, 'base_url = "http://127.0.0.1:9/v1"\nmodel = "project-model"\n')
    server.replies.extend([text_reply("hi")])
    done = run(["hello", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 0, done.stderr
    assert "ignored base_url until you trust this file" in done.stderr and "codeloop trust" in done.stderr
    assert server.requests[0]["model"] == "project-model"  # the harmless key still applies


def test_flags_beat_config_files(server, workspace) -> None:
    write_configs(workspace, 'base_url = "http://127.0.0.1:9/v1"\nmodel = "project-model"\nmax_turns = 1\n')
    server.replies.extend([text_reply("hi")])
    done = run(["hello", "--base-url", server.base_url, "--model", "flag-model", "--max-turns", "0", *BASE],
               workspace)
    assert done.returncode == 0, done.stderr
    assert server.requests[0]["model"] == "flag-model"


def test_bad_config_key_is_a_one_line_error_with_exit_2(workspace) -> None:
    write_configs(workspace, 'modle = "x"\n')
    done = run(["x"], workspace)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert "config.toml:1" in done.stderr and "modle" in done.stderr and "'model'" in done.stderr


def test_on_risk_without_terminal_denies_and_names_the_fix(server, workspace) -> None:
    server.replies.extend([tool_reply("shell", {"command": "touch made.txt"}), text_reply("ok")])
    done = run(["touch", "--json", "--base-url", server.base_url, "--profile", "anthropic", "--sandbox", "off"],
               workspace)
    assert done.returncode == 4, done.stderr  # exit 4: a call was not approved
    end = tool_end(done.stdout)
    assert "--approval never-ask" in end["error"]
    assert "--approval never-ask" in done.stderr and "touch made.txt" in done.stderr
    assert not (workspace / "made.txt").exists()


def test_always_ask_without_terminal_denies_even_a_file_write(server, workspace) -> None:
    server.replies.extend([tool_reply("write_file", {"file_path": "a.txt", "content": "x"}), text_reply("ok")])
    done = run(["w", "--json", "--base-url", server.base_url, "--profile", "anthropic", "--sandbox", "off",
                "--approval", "always-ask"], workspace)
    assert done.returncode == 4, done.stderr  # exit 4: a call was not approved
    assert "--approval never-ask" in tool_end(done.stdout)["error"]
    assert not (workspace / "a.txt").exists()


def test_mcp_server_from_config_is_registered_and_called(server, workspace) -> None:
    write_configs(workspace, f'[mcp_servers.calc]\ncommand = {json.dumps(sys.executable)}\n'
                             f'args = [{json.dumps(MCP_SERVER)}]\n')
    trust_project(workspace)
    server.replies.extend([tool_reply("calc__add", {"a": 2, "b": 40}), text_reply("42")])
    done = run(["add", "--json", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 0, done.stderr
    assert "calc__add" in [t["function"]["name"] for t in server.requests[0]["tools"]]
    end = tool_end(done.stdout)
    assert not end.get("error") and end["output"].strip() == "42"


def test_mcp_server_that_cannot_start_is_a_warning_not_a_failure(server, workspace) -> None:
    write_configs(workspace, '[mcp_servers.gone]\ncommand = "/nonexistent/mcp-server"\n')
    trust_project(workspace)
    server.replies.extend([text_reply("fine")])
    done = run(["hi", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 0, done.stderr
    assert "warning" in done.stderr and "gone" in done.stderr


def fake_bwrap_path(tmp_path: Path) -> str:
    """A PATH whose bwrap fails like bubblewrap in a container without user namespaces.
    (A stand-in: the real bwrap works on this machine, so its failure must be simulated.)"""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    exe = bindir / "bwrap"
    exe.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return f"{bindir}:{os.environ['PATH']}"


def test_default_sandbox_falls_back_to_off_with_a_loud_warning(server, tmp_path, workspace) -> None:
    server.replies.extend([tool_reply("shell", {"command": "echo ran > ran.txt"}), text_reply("ok")])
    done = run(["go", "--base-url", server.base_url, "--profile", "anthropic", "--approval", "never-ask"],
               workspace, env=isolated_env(workspace, PATH=fake_bwrap_path(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert "NO SANDBOX" in done.stderr and "install bubblewrap" in done.stderr
    assert (workspace / "ran.txt").read_text() == "ran\n"


def test_explicit_sandbox_without_bubblewrap_fails_clearly(server, tmp_path, workspace) -> None:
    done = run(["go", "--base-url", server.base_url, "--sandbox", "workspace-write"], workspace,
               env=isolated_env(workspace, PATH=fake_bwrap_path(tmp_path)))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "bubblewrap" in done.stderr and "--sandbox off" in done.stderr
    assert server.requests == []


@pytest.mark.parametrize(("flag", "expect_only_lo"), [("off", True), ("on", False)])
def test_network_flag_controls_the_sandbox_network(server, workspace, flag, expect_only_lo) -> None:
    from codeloop.environments.sandbox import probe_bwrap

    if (why := probe_bwrap()) is not None:
        pytest.skip(f"bubblewrap cannot run here: {why}")
    if os.listdir("/sys/class/net") == ["lo"]:
        pytest.skip("this machine has no network interface besides lo")
    # /proc/net/dev lists the interfaces of the command's own network namespace.
    server.replies.extend([tool_reply("shell", {"command": "tail -n +3 /proc/net/dev | cut -d: -f1"}),
                           text_reply("ok")])
    done = run(["net", "--json", "--network", flag, "--base-url", server.base_url, "--profile", "anthropic",
                "--approval", "never-ask"], workspace)
    assert done.returncode == 0, done.stderr
    interfaces = tool_end(done.stdout)["output"].split("[exit code")[0].split()
    assert "lo" in interfaces and (interfaces == ["lo"]) is expect_only_lo


def test_chat_reads_messages_from_a_pipe_and_ends_at_end_of_input(server, workspace) -> None:
    import subprocess

    from test_run_cli import CODELOOP

    server.replies.extend([text_reply("first answer"), text_reply("second answer")])
    done = subprocess.run([CODELOOP, "run", "--cwd", str(workspace), "--base-url", server.base_url, *BASE],
                          input="hello\\\nworld\nsecond\n", capture_output=True, text=True, timeout=60,
                          env=isolated_env(workspace))
    assert done.returncode == 0, done.stderr
    assert "first answer" in done.stdout and "second answer" in done.stdout
    assert server.requests[0]["messages"][-1]["content"] == "hello\nworld"
    assert server.requests[1]["messages"][-1]["content"] == "second"


def test_json_without_task_is_a_usage_error(workspace) -> None:
    done = run(["--json"], workspace)
    assert done.returncode == 2 and "--json needs a TASK" in done.stderr


def test_rewind_with_the_printed_session_id_undoes_the_runs_file_changes(server, workspace) -> None:
    import subprocess

    from test_run_cli import CODELOOP

    (workspace / "notes.txt").write_bytes(b"original\r\n")
    server.replies.extend([tool_reply("read_file", {"file_path": "notes.txt"}),
                           tool_reply("write_file", {"file_path": "notes.txt", "content": "changed"}),
                           text_reply("rewrote it")])
    done = run(["rewrite notes", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "notes.txt").read_text() == "changed"
    back = subprocess.run([CODELOOP, "rewind", session_id(done.stderr), "--to", "0"],
                          capture_output=True, text=True, timeout=60, env=isolated_env(workspace))
    assert back.returncode == 0, back.stderr
    assert (workspace / "notes.txt").read_bytes() == b"original\r\n"


def test_rich_output_ends_with_a_usage_summary(server, workspace) -> None:
    server.replies.extend([tool_reply("shell", {"command": "true"}), text_reply("done")])
    done = run(["go", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 0, done.stderr
    # chat_server reports 10 prompt and 5 completion tokens per call
    assert "2 model calls · tokens in 20 (cached 0) / out 10" in done.stderr


def test_continue_after_kill_9_keeps_the_conversation(server, workspace) -> None:
    import signal
    import subprocess
    import time

    from test_run_cli import CODELOOP

    pid_file = workspace / "job.pid"
    server.replies.extend([tool_reply("shell", {"command": "echo $$ > job.pid; exec sleep 53"}),
                           text_reply("resumed fine")])
    proc = subprocess.Popen([CODELOOP, "run", "start the long job", "--json", "--cwd", str(workspace),
                             "--base-url", server.base_url, *BASE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=isolated_env(workspace))
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text().strip():  # the command is running
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
        if pid_file.exists() and pid_file.read_text().strip():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the orphan of the killed run
    done = run(["did it finish?", "--continue", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 0, done.stderr
    sent = json.dumps(server.requests[1]["messages"])
    assert "start the long job" in sent and "did it finish?" in sent


def test_summary_shows_cost_for_a_model_with_catalog_prices(server, workspace) -> None:
    from codeloop.llm.catalog import get_model_info

    info = get_model_info("claude-sonnet-4-5")
    assert info is not None and info.input_cost_per_million and info.output_cost_per_million
    server.replies.extend([text_reply("done")])
    done = run(["go", "--model", "claude-sonnet-4-5", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 0, done.stderr
    expected = (10 * info.input_cost_per_million + 5 * info.output_cost_per_million) / 1e6
    assert f"≤ ${expected:.4f}" in done.stderr


def test_resumed_json_events_carry_the_resumed_session_id(server, workspace) -> None:
    server.replies.extend([text_reply("one"), text_reply("two")])
    first = run(["first", "--json", "--base-url", server.base_url, *BASE], workspace)
    sid = json.loads(first.stdout.splitlines()[0])["session_id"]
    second = run(["second", "--json", "--resume", sid, "--base-url", server.base_url, *BASE], workspace)
    assert second.returncode == 0, second.stderr
    assert {json.loads(line)["session_id"] for line in second.stdout.splitlines()} == {sid}
    assert session_id(second.stderr) == sid
