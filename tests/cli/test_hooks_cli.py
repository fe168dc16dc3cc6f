"""Hooks (issue 21, docs/hooks.md) end to end: the real ``codeloop run`` against the loopback
scripted model server (tests/cli/chat_server.py), hooks as real shell commands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from chat_server import ChatServer, text_reply, tool_reply
from test_interactive_tmux import launch
from test_run_cli import CODELOOP, isolated_env, run

NATIVE = ["--profile", "anthropic", "--approval", "never-ask", "--sandbox", "off"]


def user_hooks(workspace: Path, text: str) -> None:
    """Write the user-level config (always trusted) beside the workspace."""
    conf = workspace.parent / "userconf"
    conf.mkdir(exist_ok=True)
    (conf / "config.toml").write_text(text)


def tool_results(server: ChatServer, index: int) -> list[str]:
    return [str(m["content"]) for m in server.requests[index]["messages"] if m["role"] == "tool"]


def assert_all_dead(pids: Path, count: int) -> None:
    """The ``count`` processes whose ids were written to ``pids`` are gone (or zombies)."""
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == count
    alive = [p for p in started if Path(f"/proc/{p}").exists()
             and "Z" not in Path(f"/proc/{p}/stat").read_text().split(")")[-1].split()[:1]]
    assert not alive, f"processes survived: {alive}"


def events_of(stdout: str, kind: str) -> list[dict[str, object]]:
    return [e for line in stdout.splitlines() if (e := json.loads(line))["kind"] == kind]


def test_deny_hook_stops_a_shell_call_and_its_message_reaches_the_model(server, workspace) -> None:
    seen = workspace.parent / "seen.json"
    env_seen = workspace.parent / "env.txt"
    user_hooks(workspace, f'''
[[hooks]]
event = "pre_tool_call"
tools = ["shell"]
command = "cat > {seen}; env > {env_seen}; echo 'no rm here: use the trash tool' >&2; exit 2"
''')
    server.replies.extend([tool_reply("shell", {"command": "touch made"}), text_reply("ok")])
    env = isolated_env(workspace, DEPLOY_TOKEN="hunter2-very-secret")
    done = run(["clean up", "--json", "--base-url", server.base_url, *NATIVE], workspace, env)
    assert done.returncode == 0, done.stderr
    assert not (workspace / "made").exists()
    result = tool_results(server, 1)[0]
    assert "no rm here: use the trash tool" in result and "denied" in result
    event = json.loads(seen.read_text())
    assert event["event"] == "pre_tool_call" and event["tool_name"] == "shell"
    assert event["arguments"] == {"command": "touch made"} and event["workspace"] == str(workspace)
    assert event["session_id"] == events_of(done.stdout, "session_start")[0]["session_id"]
    assert "hunter2" not in env_seen.read_text() and "CODELOOP_HOOK_EVENT=pre_tool_call" in env_seen.read_text()


def test_json_deny_and_allow_decisions(server, workspace) -> None:
    user_hooks(workspace, '''
[[hooks]]
event = "pre_tool_call"
command = "grep -q forbidden && echo '{\\"decision\\": \\"deny\\", \\"message\\": \\"not that file\\"}' || echo '{\\"decision\\": \\"allow\\"}'"
''')
    server.replies.extend([
        tool_reply("write_file", {"file_path": "forbidden.txt", "content": "x\n"}),
        tool_reply("write_file", {"file_path": "fine.txt", "content": "x\n"}, "call_2"),
        text_reply("ok"),
    ])
    done = run(["write", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    assert "not that file" in tool_results(server, 1)[0]
    assert not (workspace / "forbidden.txt").exists() and (workspace / "fine.txt").exists()


def test_hook_past_its_timeout_is_killed_with_its_children_and_reported(server, workspace) -> None:
    pids = workspace.parent / "pids"
    user_hooks(workspace, f'''
[[hooks]]
event = "pre_tool_call"
timeout = 1
command = "sleep 300 & echo $! >> {pids}; setsid sleep 300 & echo $! >> {pids}; echo $$ >> {pids}; sleep 300"
''')
    server.replies.extend([tool_reply("shell", {"command": "touch made"}), text_reply("ok")])
    done = run(["go", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    # The failed hook leaves the call to the user; with no terminal it is refused (exit 4).
    assert done.returncode == 4, done.stderr
    warnings = [e["data"] for e in events_of(done.stdout, "warning")]
    assert any(w["code"] == "hook" and "timeout of 1 s and was killed" in w["message"] for w in warnings), warnings
    assert not (workspace / "made").exists()
    assert "was not approved" in tool_results(server, 1)[0]  # denied through the pending store (issue 34)
    assert "denied by codeloop: no terminal to ask for approval" in tool_results(server, 1)[0]
    assert_all_dead(pids, 3)


def test_failing_hook_warns_in_the_terminal_and_the_session_goes_on(server, workspace) -> None:
    user_hooks(workspace, '''
[[hooks]]
event = "session_start"
command = "echo broken >&2; exit 7"
''')
    server.replies.append(text_reply("still here"))
    done = run(["hi", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    assert "exit status 7" in done.stderr and "broken" in done.stderr
    assert "still here" in done.stdout


def test_session_start_and_stop_hooks_are_notified_with_the_session(server, workspace) -> None:
    log = workspace.parent / "log.jsonl"
    user_hooks(workspace, f'''
[[hooks]]
event = "session_start"
command = "cat >> {log}; echo >> {log}"

[[hooks]]
event = "stop"
command = "cat >> {log}; echo >> {log}"
''')
    server.replies.append(text_reply("all done"))
    done = run(["hi", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    start, stop = (json.loads(line) for line in log.read_text().splitlines())
    session_id = events_of(done.stdout, "session_start")[0]["session_id"]
    assert start == {"event": "session_start", "workspace": str(workspace), "session_id": session_id}
    assert stop["event"] == "stop" and stop["reason"] == "completed" and stop["final_text"] == "all done"


def test_untrusted_project_hooks_do_not_run_until_trusted(server, workspace) -> None:
    marker = workspace.parent / "ran"
    (workspace / ".codeloop").mkdir()
    (workspace / ".codeloop" / "config.toml").write_text(f'''
[[hooks]]
event = "session_start"
command = "touch {marker}"
''')
    server.replies.append(text_reply("ok"))
    done = run(["hi", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert "hooks" in done.stderr and "codeloop trust" in done.stderr
    trusted = subprocess.run([CODELOOP, "trust", str(workspace), "--yes"], capture_output=True, text=True,
                             env=isolated_env(workspace), timeout=60, stdin=subprocess.DEVNULL)
    assert trusted.returncode == 0, trusted.stderr
    assert f"session_start: touch {marker}" in trusted.stdout
    server.replies.append(text_reply("ok"))
    done = run(["hi", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    assert marker.exists()


def test_post_tool_call_appends_and_matchers_pick_the_calls(server, workspace) -> None:
    user_hooks(workspace, '''
[[hooks]]
event = "post_tool_call"
paths = ["src/*.py"]
command = "echo LINT: $(python3 -c 'import json,sys; print(json.load(sys.stdin)[\\"arguments\\"][\\"file_path\\"])') ok"

[[hooks]]
event = "post_tool_call"
tools = ["shell"]
command = "echo shell-hook"
''')
    server.replies.extend([
        tool_reply("write_file", {"file_path": "notes.txt", "content": "x\n"}),
        tool_reply("write_file", {"file_path": str(workspace / "src" / "app.py"), "content": "x = 1\n"}, "call_2"),
        tool_reply("shell", {"command": "echo hi"}, "call_3"),
        text_reply("ok"),
    ])
    done = run(["write", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    txt, py, shell = tool_results(server, 1)[0], tool_results(server, 2)[1], tool_results(server, 3)[2]
    assert "LINT" not in txt and "shell-hook" not in txt
    assert f"LINT: {workspace}/src/app.py ok" in py and "shell-hook" not in py
    assert "hi" in shell and "shell-hook" in shell and "LINT" not in shell


def test_user_prompt_hook_adds_context_and_ask_goes_to_the_approval_prompt(server, workspace) -> None:
    user_hooks(workspace, '''
[[hooks]]
event = "user_prompt"
command = "echo 'Branch: feature-x'"

[[hooks]]
event = "pre_tool_call"
tools = ["shell"]
command = "echo '{\\"decision\\": \\"ask\\", \\"message\\": \\"network command\\"}'"
''')
    server.replies.extend([tool_reply("shell", {"command": "touch made"}), text_reply("ok")])
    done = run(["go", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 4, done.stderr  # asked, and no terminal could answer
    assert "network command" in done.stderr and not (workspace / "made").exists()
    first = server.requests[0]["messages"]
    assert any("Branch: feature-x" in json.dumps(m) for m in first if m["role"] == "user")


def test_bad_hook_entries_are_clear_config_errors(workspace) -> None:
    (workspace / ".codeloop").mkdir()
    config = workspace / ".codeloop" / "config.toml"
    for text, expected in [
        ('model = "m"\n\n[[hooks]]\nevent = "pre_tool"\ncommand = "x"\n',
         "config.toml:3: [[hooks]] #1 needs event = one of session_start, user_prompt, pre_tool_call"),
        ('[[hooks]]\nevent = "stop"\ncommand = "x"\n[[hooks]]\nevent = "stop"\ncomand = "x"\n',
         "config.toml:4: [[hooks]] #2 has the unknown key 'comand'; did you mean 'command'?"),
        ('[[hooks]]\nevent = "stop"\ncommand = "x"\ntimeout = -1\n', "timeout must be a positive number"),
        ('[[hooks]]\nevent = "stop"\ncommand = "x"\ntools = ["shell"]\n',
         "tools applies only to pre_tool_call and post_tool_call hooks"),
    ]:
        config.write_text(text)
        done = run(["x"], workspace, {**isolated_env(workspace), "PATH": os.environ["PATH"]})
        assert done.returncode == 2 and expected in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_chat_asks_the_user_when_a_hook_says_ask(server: ChatServer, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    user_hooks(workspace, '''
[[hooks]]
event = "pre_tool_call"
tools = ["shell"]
command = "echo '{\\"decision\\": \\"ask\\", \\"message\\": \\"the hook wants a human\\"}'"
''')
    server.replies.extend([tool_reply("shell", {"command": "touch made"}), text_reply("Made it.")])
    pane = launch(server, tmp_path, "--approval", "never-ask")
    try:
        pane.wait_for("Ctrl-C aborts")
        pane.type_line("make it")
        pane.wait_for("the hook wants a human")
        assert not (workspace / "made").exists()
        pane.type_line("y")
        pane.wait_for("Made it.")
        assert (workspace / "made").exists()
        pane.wait_for("›", count=2)  # the turn is over: typed earlier, /exit would steer it (seen under load)
        pane.type_line("/exit")
        pane.wait_for("EXITED=0")
    finally:
        pane.close()
