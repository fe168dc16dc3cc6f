"""Answering ``codeloop run``'s asks from elsewhere (issue 34): the real ``codeloop run`` against
the loopback scripted model, answered by real ``codeloop approvals`` processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from chat_server import ChatServer, text_reply, tool_reply
from test_run_cli import CODELOOP, SCHEMA, isolated_env

HEADLESS = ["--profile", "anthropic", "--approval", "on-risk", "--sandbox", "off", "--approval-from", "store"]
WAIT = 60.0
"""How long to wait for another process before the test gives up (not a measured threshold)."""


def start_run(server: ChatServer, workspace: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([CODELOOP, "run", *args, "--json", "--base-url", server.base_url, *HEADLESS,
                             "--cwd", str(workspace)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=isolated_env(workspace), stdin=subprocess.DEVNULL)


def approvals(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CODELOOP, "approvals", *args], capture_output=True, text=True,
                          env=isolated_env(workspace), timeout=WAIT)


def waiting_calls(workspace: Path, *extra: str) -> list[dict[str, Any]]:
    listed = approvals(workspace, "list", "--json", *extra)
    assert listed.returncode == 0, listed.stderr
    return list(json.loads(listed.stdout))


def first_waiting(workspace: Path) -> dict[str, Any]:
    """The first call waiting in the store, read by a second process as soon as there is one."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        found = waiting_calls(workspace)
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError("no call waited in the store")


def events(stdout: str, kind: str) -> list[dict[str, Any]]:
    return [e["data"] for line in stdout.splitlines() if (e := json.loads(line))["kind"] == kind]


def test_a_headless_run_is_answered_twice_at_once_from_other_shells_and_runs_once(
        server: ChatServer, workspace: Path) -> None:
    server.replies.extend([tool_reply("shell", {"command": "echo ran >> made.txt"}), text_reply("done")])
    run = start_run(server, workspace, "make it")
    entry = first_waiting(workspace)
    assert (entry["face"], entry["tool"], entry["command"], entry["status"]) == (
        "run", "shell", "echo ran >> made.txt", "pending")
    assert entry["grants"] == ["once", "always"] and entry["remember_as"] == ["echo"]
    assert not (workspace / "made.txt").exists()
    answers = [subprocess.Popen([CODELOOP, "approvals", "approve", entry["id"], "--as", who, "--reason", "ok"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=isolated_env(workspace))
               for who in ("alice", "bob")]
    results = [(a.wait(timeout=WAIT), *a.communicate()) for a in answers]
    stdout, stderr = run.communicate(timeout=WAIT)
    assert run.returncode == 0, stderr
    for line in stdout.splitlines():
        jsonschema.validate(json.loads(line), SCHEMA)
    assert sorted(code for code, *_ in results) == [0, 1]
    winner = ("alice", "bob")[[code for code, *_ in results].index(0)]
    loser_err = next(err for code, _, err in results if code == 1)
    assert f"was already approved by {winner}" in loser_err and loser_err.count("\n") == 1
    assert (workspace / "made.txt").read_text() == "ran\n"  # once
    pending, decided = events(stdout, "approval_pending"), events(stdout, "approval_decided")
    assert [p["pending_id"] for p in pending] == [entry["id"]]
    assert [(d["status"], d["decided_by"], d["reason"]) for d in decided] == [("approved", winner, "ok")]
    assert waiting_calls(workspace, "--all")[0]["status"] == "ran"
    # The decision is in the session log too.
    session = events(stdout, "session_start")
    log = (workspace.parent / "state" / "sessions").glob("*.jsonl")
    logged = [json.loads(line) for path in log for line in path.read_text().splitlines()]
    assert any(e["kind"] == "approval_decided" and e["data"]["decided_by"] == winner for e in logged), session
    assert entry["session"] == json.loads(stdout.splitlines()[0])["session_id"]


def test_a_denial_from_another_shell_reaches_the_model_with_who_and_why(server: ChatServer, workspace: Path) -> None:
    server.replies.extend([tool_reply("shell", {"command": "touch made"}), text_reply("ok")])
    run = start_run(server, workspace, "make it")
    entry = first_waiting(workspace)
    denied = approvals(workspace, "deny", entry["id"], "--as", "carol", "--reason", "not on main")
    assert denied.returncode == 0 and denied.stdout.startswith("denied: touch made"), denied.stderr
    _, stderr = run.communicate(timeout=WAIT)
    assert run.returncode == 0, stderr
    assert not (workspace / "made").exists()
    told = [str(m["content"]) for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "denied by carol: not on main" in told[0]


def test_always_from_another_shell_is_remembered_for_the_project(server: ChatServer, workspace: Path) -> None:
    server.replies.extend([tool_reply("shell", {"command": "touch one"}), text_reply("ok")])
    run = start_run(server, workspace, "make it")
    entry = first_waiting(workspace)
    assert approvals(workspace, "approve", entry["id"], "--always").returncode == 0
    run.communicate(timeout=WAIT)
    assert (workspace / "one").exists()
    assert '"touch"' in (workspace / ".codeloop" / "approvals.toml").read_text()


def test_an_interrupted_run_withdraws_its_waiting_call(server: ChatServer, workspace: Path) -> None:
    server.replies.extend([tool_reply("shell", {"command": "touch made"}), text_reply("ok")])
    run = start_run(server, workspace, "make it")
    entry = first_waiting(workspace)
    run.send_signal(signal.SIGINT)
    stdout, _ = run.communicate(timeout=WAIT)
    assert run.returncode == 130
    late = approvals(workspace, "approve", entry["id"])
    assert late.returncode == 1 and "was already withdrawn by codeloop" in late.stderr
    assert not (workspace / "made").exists()
    withdrawn = [d for d in events(stdout, "approval_decided") if d["status"] == "withdrawn"]
    assert [d["pending_id"] for d in withdrawn] == [entry["id"]]


def test_killed_between_the_decision_and_the_run_the_call_never_runs_twice(
        server: ChatServer, workspace: Path) -> None:
    """kill -9 while the call waits, approve it (approved, never claimed), resume: the call is
    reported interrupted and does not run; kill -9 while an approved call runs (claimed), resume:
    reported interrupted, not run again."""
    server.replies.extend([tool_reply("shell", {"command": "echo ran >> made.txt"}), text_reply("never")])
    run = start_run(server, workspace, "make it")
    entry = first_waiting(workspace)
    session = entry["session"]
    run.send_signal(signal.SIGKILL)
    run.communicate(timeout=WAIT)
    assert approvals(workspace, "approve", entry["id"]).returncode == 0  # decided after the owner died
    server.replies.clear()
    server.replies.extend([tool_reply("shell", {"command": "echo again >> made.txt; sleep 300"}, call_id="c2"),
                           text_reply("never")])
    resumed = start_run(server, workspace, "go on", "--resume", session)
    second = first_waiting(workspace)
    stored = {e["id"]: e for e in waiting_calls(workspace, "--all")}
    assert stored[entry["id"]]["status"] == "interrupted"  # reported, never run
    assert not (workspace / "made.txt").exists()
    assert approvals(workspace, "approve", second["id"]).returncode == 0
    deadline = time.monotonic() + WAIT
    while not (workspace / "made.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert waiting_calls(workspace, "--all", "--session", session)[-1]["status"] == "running"
    os.kill(resumed.pid, signal.SIGKILL)  # killed while the approved command runs
    resumed.communicate(timeout=WAIT)
    server.replies.extend([text_reply("finished")])
    last = start_run(server, workspace, "and now?", "--resume", session)
    _, stderr = last.communicate(timeout=WAIT)
    assert last.returncode == 0, stderr
    assert "was interrupted; it is not run" in stderr
    stored = {e["id"]: e for e in waiting_calls(workspace, "--all")}
    assert stored[second["id"]]["status"] == "interrupted"
    assert (workspace / "made.txt").read_text() == "again\n"  # ran once, never again


def test_approvals_cli_errors_are_one_line(workspace: Path) -> None:
    unknown = approvals(workspace, "approve", "nope")
    assert unknown.returncode == 1
    assert unknown.stderr == "error: no pending call 'nope' (list them with 'codeloop approvals list --all')\n"
    assert approvals(workspace, "list").stdout == "nothing waits for an answer\n"
    helped = approvals(workspace, "approve", "--help")
    assert "Example: codeloop approvals approve" in helped.stdout and "--always" in helped.stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_terminal_prompt_also_takes_an_answer_given_in_another_shell(server: ChatServer, tmp_path: Path) -> None:
    """--approval-from terminal (the default): the question is on the terminal, and an answer
    given with codeloop approvals counts too; the question is then withdrawn."""
    from test_interactive_tmux import launch

    workspace = tmp_path / "ws"
    server.replies.extend([tool_reply("shell", {"command": "touch yes.txt"}), text_reply("made it")])
    pane = launch(server, tmp_path, "make yes.txt")
    try:
        pane.wait_for("Approve?")
        entry = first_waiting(workspace)
        assert entry["id"] in pane.screen()  # the question names the id another shell can answer
        assert approvals(workspace, "approve", entry["id"], "--as", "dave").returncode == 0
        pane.wait_for("EXITED=0")
        assert (workspace / "yes.txt").exists() and "approved by dave" in pane.screen()
    finally:
        pane.close()


def test_codeloop_tool_waits_in_the_store_and_runs_once_answered(workspace: Path) -> None:
    tool = subprocess.Popen([CODELOOP, "tool", "shell", "--args", json.dumps({"command": "echo ran >> made.txt"}),
                             "--cwd", str(workspace), "--approval", "on-risk", "--approval-from", "store"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=isolated_env(workspace),
                            stdin=subprocess.DEVNULL)
    entry = first_waiting(workspace)
    assert (entry["face"], entry["command"]) == ("tool", "echo ran >> made.txt")
    assert approvals(workspace, "approve", entry["id"]).returncode == 0
    _, stderr = tool.communicate(timeout=WAIT)
    assert tool.returncode == 0, stderr
    assert f"codeloop approvals approve|deny {entry['id']}" in stderr
    assert (workspace / "made.txt").read_text() == "ran\n"
    assert waiting_calls(workspace, "--all")[0]["status"] == "ran"
