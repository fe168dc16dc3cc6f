"""The relay's approvals live in the shared pending store (issue 34), black box.

A command the session's policy holds is a pending call in ``$CODELOOP_STATE_DIR/approvals.sqlite3``:
another process lists it through ``PendingStore.list()``; two ``relay approve`` processes answering
it at once give one run and one "already approved by ..." refusal; a relay killed between the
decision and the run either runs the command once on the next step or reports it interrupted,
never twice.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from relay_helpers import CODELOOP, Run, as_json, clean_env

HELD_LINE = "echo ran >> log.txt && rm -rf build"
"""Under the standard preset "rm -rf" needs approval; the line logs each run."""


def _env(tmp_path: Path) -> dict[str, str]:
    return clean_env(CODELOOP_STATE_DIR=str(tmp_path / "state"))


def _store_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "approvals.sqlite3"


_LIST = """
import dataclasses, json, sys
from codeloop.policy.pending import SqlitePendingStore
store = SqlitePendingStore(sys.argv[1])
print(json.dumps([dataclasses.asdict(c) for c in store.list(session=sys.argv[2], status=sys.argv[3])]))
"""

_DECIDE = """
import sys
from codeloop.policy.pending import Decided, SqlitePendingStore
result = SqlitePendingStore(sys.argv[1]).decide(sys.argv[2], "approve", "a web page", "looks fine")
print(type(result).__name__)
"""


def _listed(tmp_path: Path, session: str, status: str = "pending") -> list[dict[str, Any]]:
    """What another process reads from the store (a web page, an editor)."""
    out = subprocess.run([sys.executable, "-c", _LIST, str(_store_path(tmp_path)), session, status],
                         capture_output=True, text=True, check=True, env=_env(tmp_path), timeout=60)
    listed: list[dict[str, Any]] = json.loads(out.stdout)
    return listed


def _held(relay: Run, tmp_path: Path, line: str = HELD_LINE) -> tuple[str, Path]:
    sid = as_json(relay("new", "task", "--policy", "standard", "--json"))["sessionId"]
    workspace = tmp_path / "root" / "workspace"
    (workspace / "build").mkdir()
    (tmp_path / "root" / "inbox" / "reply.txt").write_text(
        f"[RUN_COMMAND]\n{line}\n[/RUN_COMMAND]\n[RUN_COMMAND]\necho after >> after.txt\n[/RUN_COMMAND]\n")
    assert as_json(relay("step", "--json"))["held"]["id"] == "1-1"
    return sid, workspace


def _relay_argv(tmp_path: Path, *args: str) -> list[str]:
    return [*CODELOOP, "relay", *args, "--root", str(tmp_path / "root")]


def test_a_held_command_is_read_from_another_process_and_two_approves_run_it_once(
        relay: Run, tmp_path: Path) -> None:
    sid, workspace = _held(relay, tmp_path)
    [entry] = _listed(tmp_path, sid)
    assert entry["face"] == "relay" and entry["session"] == sid and entry["status"] == "pending"
    assert entry["command"] == HELD_LINE and entry["tool"] == "RUN_COMMAND" and "rm -rf" in entry["reason"]
    assert as_json(relay("status", "--json"))["sessions"][0]["held"]["pending"] == entry["id"]

    # Two people answer at once, from two shells: one decision, one run.
    procs = [subprocess.Popen(_relay_argv(tmp_path, "approve", entry["id"]), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env(tmp_path)) for _ in range(2)]
    outcomes = sorted((p.wait(120), p.stdout.read(), p.stderr.read()) for p in procs)  # type: ignore[union-attr]
    assert [code for code, _, _ in outcomes] == [0, 1], outcomes
    refused = outcomes[1][2]
    assert f"pending call {entry['id']} was already approved by " in refused and " at " in refused
    assert "Traceback" not in refused
    assert (workspace / "log.txt").read_text() == "ran\n" and not (workspace / "build").exists()
    assert (workspace / "after.txt").read_text() == "after\n"
    assert _listed(tmp_path, sid) == []
    [ran] = _listed(tmp_path, sid, "ran")
    assert ran["id"] == entry["id"] and ran["decided_by"] and ran["decided_at"] is not None

    # The held id of the outbox still works for a late answer: it names what was decided.
    late = relay("deny", "1-1", check=False)
    assert late.returncode == 1 and "nothing waits under '1-1'" in late.stderr
    assert (workspace / "log.txt").read_text() == "ran\n"


def test_an_answer_given_through_the_store_is_applied_by_the_next_step(relay: Run, tmp_path: Path) -> None:
    sid, workspace = _held(relay, tmp_path)
    [entry] = _listed(tmp_path, sid)
    decided = subprocess.run([sys.executable, "-c", _DECIDE, str(_store_path(tmp_path)), entry["id"]],
                             capture_output=True, text=True, check=True, env=_env(tmp_path), timeout=60)
    assert decided.stdout.strip() == "Decided"
    step = as_json(relay("step", "--json"))
    assert step["held"] is None and step["sequence"] == 2
    assert (workspace / "log.txt").read_text() == "ran\n"
    relay("step")
    assert (workspace / "log.txt").read_text() == "ran\n"


def test_approve_killed_between_decision_and_run_runs_the_command_once_on_the_next_step(
        relay: Run, tmp_path: Path) -> None:
    sid, workspace = _held(relay, tmp_path)
    # Hold the root's lock: "approve" records its decision, then waits for the lock to run the command.
    fd = os.open(tmp_path / "root" / "sessions" / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        proc = subprocess.Popen(_relay_argv(tmp_path, "approve", "1-1"), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=_env(tmp_path))
        while not _listed(tmp_path, sid, "approved") and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "approve ended before its decision was seen"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        os.close(fd)
    assert not (workspace / "log.txt").exists()
    again = relay("approve", "1-1", check=False)  # the decision is made: answering again is refused
    assert again.returncode == 1 and "already approved by " in again.stderr
    assert not (workspace / "log.txt").exists()
    relay("step")
    assert (workspace / "log.txt").read_text() == "ran\n" and (workspace / "after.txt").exists()
    relay("step")
    assert (workspace / "log.txt").read_text() == "ran\n"


def test_relay_killed_while_the_approved_command_runs_reports_it_interrupted_never_twice(
        relay: Run, tmp_path: Path) -> None:
    sid, workspace = _held(relay, tmp_path, "echo ran >> log.txt && rm -rf build && sleep 600")
    [entry] = _listed(tmp_path, sid)
    proc = subprocess.Popen(_relay_argv(tmp_path, "approve", "1-1"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=_env(tmp_path))
    while not (workspace / "log.txt").exists() and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    relay("step")
    outbox = (tmp_path / "root" / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "interrupted because the relay stopped while it ran" in outbox
    assert (workspace / "log.txt").read_text() == "ran\n" and (workspace / "after.txt").exists()
    [done] = _listed(tmp_path, sid, "interrupted")
    assert done["id"] == entry["id"]


def test_codeloop_approvals_lists_and_denies_a_relay_ask_and_the_next_step_says_so(
        relay: Run, tmp_path: Path) -> None:
    sid, workspace = _held(relay, tmp_path)
    [entry] = _listed(tmp_path, sid)
    approvals = [*CODELOOP, "approvals"]
    listed = subprocess.run([*approvals, "list", "--json"], capture_output=True, text=True, check=True,
                            env=_env(tmp_path), timeout=60)
    assert [e["id"] for e in json.loads(listed.stdout) if e["face"] == "relay"] == [entry["id"]]
    subprocess.run([*approvals, "deny", entry["id"], "--reason", "not on this machine"], capture_output=True,
                   text=True, check=True, env=_env(tmp_path), timeout=60)
    relay("step")
    outbox = (tmp_path / "root" / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "[FAILED] RUN_COMMAND: Not run: the person relaying for you denied it: not on this machine\n" in outbox
    assert not (workspace / "log.txt").exists() and (workspace / "after.txt").exists()


def test_watch_finishes_the_reply_once_the_ask_is_answered_through_the_store(relay: Run, tmp_path: Path) -> None:
    sid = as_json(relay("new", "task", "--policy", "standard", "--json"))["sessionId"]
    workspace = tmp_path / "root" / "workspace"
    proc = subprocess.Popen(_relay_argv(tmp_path, "watch"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(tmp_path))
    try:
        (tmp_path / "root" / "inbox" / "reply.txt").write_text(
            f"[RUN_COMMAND]\n{HELD_LINE}\n[/RUN_COMMAND]\n[DONE]\ncleaned\n[/DONE]\n")
        assert proc.stdout is not None
        while "Waiting for your approval (1-1)" not in (line := proc.stdout.readline()):
            assert line, "watch ended before it held the command"
        [entry] = _listed(tmp_path, sid)
        subprocess.run([sys.executable, "-c", _DECIDE, str(_store_path(tmp_path)), entry["id"]], check=True,
                       capture_output=True, env=_env(tmp_path), timeout=60)
        rest, err = proc.communicate(timeout=120)  # watch steps once it sees the answer, then DONE ends it
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err
    assert "complete" in rest and (workspace / "log.txt").read_text() == "ran\n"
