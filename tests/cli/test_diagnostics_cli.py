"""Diagnostics after edits (issue 21, docs/tools.md) end to end: the real ``codeloop run`` against
the loopback scripted model server (tests/cli/chat_server.py). The model writes a broken file and
its next request holds where; commands from the config files run on the edited file, a project's
only once trusted, and one that hangs is killed at its timeout with a warning."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from chat_server import ChatServer, text_reply, tool_reply
from test_hooks_cli import NATIVE, assert_all_dead, events_of, tool_results, user_hooks
from test_run_cli import CODELOOP, isolated_env, run

from codeloop.environments.sandbox import probe_bwrap

BROKEN = "import sys\n\ndef main():\nprint(sys.argv)\n"


def write_broken(server: ChatServer, path: str = "app.py") -> None:
    server.replies.extend([tool_reply("write_file", {"file_path": path, "content": BROKEN}), text_reply("done")])


def test_the_next_request_holds_the_syntax_error_and_no_diagnostics_leaves_it_out(server, workspace) -> None:
    write_broken(server)
    done = run(["write app.py", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    result = tool_results(server, 1)[0]
    assert result.startswith(f"Wrote {len(BROKEN)} bytes to app.py\n\n[diagnostics] app.py does not parse after this edit:\n")
    assert "line 4, column 1: expected an indented block after function definition on line 3" in result
    assert "    4 | print(sys.argv)" in result

    write_broken(server, "other.py")
    done = run(["write other.py", "--base-url", server.base_url, "--no-diagnostics", *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    assert tool_results(server, 3) == [f"Wrote {len(BROKEN)} bytes to other.py"]


def test_the_config_switch_turns_it_off_and_the_flag_back_on(server, workspace) -> None:
    user_hooks(workspace, "diagnostics = false\n")
    write_broken(server)
    assert run(["go", "--base-url", server.base_url, *NATIVE], workspace).returncode == 0
    assert tool_results(server, 1) == [f"Wrote {len(BROKEN)} bytes to app.py"]
    write_broken(server, "b.py")
    assert run(["go", "--base-url", server.base_url, "--diagnostics", *NATIVE], workspace).returncode == 0
    assert "[diagnostics] b.py does not parse" in tool_results(server, 3)[0]


def test_a_command_runs_on_the_edited_file_in_the_sandbox(server, workspace) -> None:
    if (why := probe_bwrap()) is not None:
        pytest.skip(f"bubblewrap cannot run here: {why}")
    user_hooks(workspace, 'diagnostics = [{ command = "python3 -m py_compile {file}", paths = ["*.py"] }]\n')
    write_broken(server, "my app.py")
    sandboxed = ["--profile", "anthropic", "--approval", "never-ask", "--sandbox", "workspace-write"]
    done = run(["go", "--base-url", server.base_url, *sandboxed], workspace)
    assert done.returncode == 0, done.stderr
    result = tool_results(server, 1)[0]
    assert "[diagnostics `python3 -m py_compile 'my app.py'`: exit code 1]" in result
    assert "IndentationError" in result and "[diagnostics] my app.py does not parse" in result


def test_an_untrusted_projects_diagnostics_commands_do_not_run_until_trusted(server, workspace) -> None:
    marker = workspace.parent / "ran"
    (workspace / ".codeloop").mkdir()
    (workspace / ".codeloop" / "config.toml").write_text(f'diagnostics = ["touch {marker}; echo LINTED {{file}}"]\n')
    server.replies.extend([tool_reply("write_file", {"file_path": "a.py", "content": "x = 1\n"}), text_reply("ok")])
    done = run(["go", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    assert not marker.exists() and tool_results(server, 1) == ["Wrote 6 bytes to a.py"]
    assert "ignored diagnostics until you trust this file" in done.stderr.replace("\n", " ")
    trusted = subprocess.run([CODELOOP, "trust", str(workspace), "--yes"], capture_output=True, text=True,
                             env=isolated_env(workspace), timeout=60, stdin=subprocess.DEVNULL)
    assert trusted.returncode == 0, trusted.stderr
    assert f"diagnostics = after edits: touch {marker}; echo LINTED {{file}}" in trusted.stdout
    server.replies.extend([tool_reply("write_file", {"file_path": "b.py", "content": "x = 2\n"}), text_reply("ok")])
    done = run(["go", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    assert marker.exists()
    assert tool_results(server, 3)[0].endswith(f"\n\n[diagnostics `touch {marker}; echo LINTED b.py`]\nLINTED b.py")


def test_a_hanging_command_is_killed_at_its_timeout_with_a_warning_and_the_session_goes_on(server, workspace) -> None:
    pids = workspace.parent / "pids"
    user_hooks(workspace, f'''
[[diagnostics]]
command = "sleep 300 & echo $! >> {pids}; setsid sleep 300 & echo $! >> {pids}; echo $$ >> {pids}; sleep 300"
timeout = 1
''')
    server.replies.extend([tool_reply("write_file", {"file_path": "a.py", "content": "x = 1\n"}),
                           text_reply("still here")])
    done = run(["go", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    warnings = [e["data"] for e in events_of(done.stdout, "warning")]
    assert any(w["code"] == "diagnostics" and "timeout of 1 s and was killed" in w["message"] for w in warnings), warnings
    assert tool_results(server, 1) == ["Wrote 6 bytes to a.py"]
    assert events_of(done.stdout, "session_end")[-1]["data"]["final_text"] == "still here"
    assert_all_dead(pids, 3)


def test_run_help_documents_the_switch() -> None:
    done = subprocess.run([CODELOOP, "run", "--help"], capture_output=True, text=True, timeout=60,
                          env={**isolated_env(Path("/nonexistent/ws")), "COLUMNS": "200"})
    assert done.returncode == 0
    assert "--diagnostics" in done.stdout and "--no-diagnostics" in done.stdout
    assert "syntax errors the edit" in " ".join(done.stdout.split())
