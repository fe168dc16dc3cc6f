"""Background commands of ``codeloop run`` (issue 21), end to end: the real command against the
loopback scripted model server (chat_server.py), real processes, real bubblewrap."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from chat_server import ChatServer, text_reply, tool_reply
from test_interactive_tmux import launch
from test_nothing_outlives_cli import alive, kill_mid_command
from test_plan_headless_cli import NATIVE, tool_results
from test_run_cli import CODELOOP, isolated_env, run

from codeloop.environments.sandbox import probe_bwrap

ESCAPE = "setsid sh -c 'echo $$ > escaped; exec sleep 300' & echo $$ > main; sleep 300"
"""A job whose child leaves its process group and session (setsid)."""
WAIT_FOR_PIDS = "while [ ! -s escaped ] || [ ! -s main ]; do sleep 0.05; done"


def call(name: str, arguments: dict[str, object], n: int) -> dict[str, object]:
    return tool_reply(name, arguments, call_id=f"call_{n}")


def pids(workspace: Path) -> list[int]:
    return [int((workspace / name).read_text()) for name in ("main", "escaped")]


def gone(pid_list: list[int]) -> bool:
    for _ in range(500):  # a SIGKILL is delivered asynchronously
        if not any(alive(pid) for pid in pid_list):
            return True
        time.sleep(0.02)
    return False


def test_background_job_reads_input_reports_output_and_stops(server, workspace) -> None:
    server.replies.extend([
        call("shell", {"command": 'echo ready; while read line; do echo "got $line"; done', "background": True}, 1),
        call("job_input", {"job_id": "job1", "text": "hello\n"}, 2),
        call("job_output", {}, 3),
        call("job_stop", {"job_id": "job1"}, 4),
        call("job_output", {"job_id": "job9"}, 5),
        text_reply("done"),
    ])
    done = run(["serve", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    started, answered, listing, stopped, unknown = (tool_results(server, i)[-1] for i in range(1, 6))
    assert "Started background job job1" in started and "ready" in started and "[job1 running]" in started
    assert "got hello" in answered + stopped and "[job1 running]" in answered
    assert "job1: running: echo ready" in listing
    assert "[job1 exited with code -15]" in stopped
    assert "no background job 'job9'" in unknown and "job1" in unknown
    # The tools are offered to the model with the shell's new parameter.
    tools = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
    assert {"job_output", "job_input", "job_stop"} <= set(tools)
    assert "background" in tools["shell"]["parameters"]["properties"]


def test_no_process_of_a_job_outlives_the_session_setsid_included(server, workspace) -> None:
    server.replies.extend([call("shell", {"command": ESCAPE, "background": True}, 1),
                           call("shell", {"command": WAIT_FOR_PIDS}, 2), text_reply("left it running")])
    done = run(["start", "--json", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    left = pids(workspace)
    try:
        assert gone(left), f"processes of the job outlived the session: {left}"
    finally:
        for pid in left:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_jobs_die_when_the_chat_session_closes_while_codeloop_runs_on(server: ChatServer, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    server.replies.extend([call("shell", {"command": ESCAPE, "background": True}, 1),
                           call("shell", {"command": WAIT_FOR_PIDS}, 2), text_reply("Job started.")])
    pane = launch(server, tmp_path, "--approval", "never-ask")
    left: list[int] = []
    try:
        pane.wait_for("Ctrl-C aborts")
        pane.type_line("start it")
        pane.wait_for("Job started.")
        left = pids(workspace)
        assert all(alive(pid) for pid in left)
        pane.wait_for("›", count=2)  # the turn is over: typed earlier, /plan would steer it (seen in CI)
        pane.type_line("/plan")  # closes the Session; the next input opens another
        pane.wait_for("plan mode on")
        assert gone(left), f"processes of the job outlived its session: {left}"
        pane.type_line("/exit")
        pane.wait_for("EXITED=0")
    finally:
        pane.close()
        for pid in left:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_no_process_of_a_job_outlives_codeloop_killed(sig: signal.Signals, tmp_path: Path) -> None:
    with ChatServer() as server:
        server.replies.extend([
            call("shell", {"command": ESCAPE, "background": True}, 1),
            # kill_mid_command kills codeloop once "started" names a process, and checks that
            # every process below codeloop then, the job's escapee included, is gone.
            call("shell", {"command": f"{WAIT_FOR_PIDS}; sleep 300 & echo $! > started; sleep 300",
                           "timeout_ms": 600_000}, 2)])
        kill_mid_command([CODELOOP, "run", "wait", "--cwd", str(tmp_path), "--base-url", server.base_url, *NATIVE],
                         tmp_path, sig, isolated_env(tmp_path))
    assert not any(alive(pid) for pid in pids(tmp_path))


def test_background_job_runs_in_the_sandbox(server, workspace) -> None:
    if (why := probe_bwrap()) is not None:
        pytest.skip(f"bubblewrap cannot run here: {why}")
    probe = Path("/usr/codeloop-job-probe")  # writable by root without the sandbox
    server.replies.extend([call("shell", {"command": f"touch {probe} ../outside inside; echo made",
                                          "background": True}, 1),
                           call("job_stop", {"job_id": "job1"}, 2), text_reply("done")])
    done = run(["touch", "--json", "--base-url", server.base_url, "--profile", "anthropic", "--approval",
                "never-ask", "--sandbox", "workspace-write"], workspace)
    assert done.returncode == 0, done.stderr
    output = tool_results(server, 1)[-1] + tool_results(server, 2)[-1]
    assert "Read-only file system" in output and "made" in output
    assert (workspace / "inside").exists() and not (workspace.parent / "outside").exists()
    assert not probe.exists()


def test_starting_a_job_goes_through_approval(server, workspace) -> None:
    server.replies.extend([call("shell", {"command": "touch made.txt", "background": True}, 1), text_reply("no")])
    done = subprocess.run([CODELOOP, "run", "make it", "--cwd", str(workspace), "--base-url", server.base_url,
                           "--profile", "anthropic", "--sandbox", "off", "--approval", "on-risk"],
                          capture_output=True, text=True, env=isolated_env(workspace), timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 4, done.stderr
    assert not (workspace / "made.txt").exists()
    assert "no terminal to ask for approval" in tool_results(server, 1)[0]
    assert "Started background job" not in tool_results(server, 1)[0]
