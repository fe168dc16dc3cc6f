"""The relay's policy, black box: the installed ``codeloop relay`` on a temporary root.

A command the session's policy refuses never runs and the next outbox says why; one it
sends for approval waits until ``relay approve`` (then runs exactly once) or ``relay deny``
(then never runs).
"""

from __future__ import annotations

import json
from pathlib import Path

from relay_helpers import Run, as_json


def _root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def _reply(tmp_path: Path, text: str, name: str = "reply.txt") -> None:
    (_root(tmp_path) / "inbox" / name).write_text(text)


def _outbox(tmp_path: Path, sid: str, seq: int) -> str:
    return (_root(tmp_path) / "outbox" / f"{sid}_seq{seq:04d}.txt").read_text()


def _run(line: str) -> str:
    return f"[RUN_COMMAND]\n{line}\n[/RUN_COMMAND]\n"


# Under the standard preset "rm -rf" needs approval; the line logs each run.
HELD_LINE = "echo ran >> log.txt && rm -rf build"


def test_default_policy_refuses_sudo_and_the_next_outbox_says_why(relay: Run, tmp_path: Path) -> None:
    new = as_json(relay("new", "task", "--json"))
    assert new["policy"] == "permissive"
    sid = new["sessionId"]
    _reply(tmp_path, _run("touch ran.txt && sudo true") + _run("echo after > after.txt"))
    out = relay("step")
    workspace = _root(tmp_path) / "workspace"
    assert not (workspace / "ran.txt").exists()  # no part of a refused line runs
    assert (workspace / "after.txt").read_text() == "after\n"  # the rest of the reply does
    second = _outbox(tmp_path, sid, 2)
    assert ("[FAILED] RUN_COMMAND: Not run: the relay policy 'permissive' refuses it: "
            "command 'sudo' is blocked (remove sudo from the command)\n") in second
    assert "refuses it" in out.stdout


def test_held_command_waits_then_runs_exactly_once_after_approve(relay: Run, tmp_path: Path) -> None:
    sid = as_json(relay("new", "task", "--policy", "standard", "--json"))["sessionId"]
    workspace = _root(tmp_path) / "workspace"
    (workspace / "build").mkdir()
    _reply(tmp_path, _run("echo before > before.txt") + _run(HELD_LINE) + _run("echo after > after.txt"))
    out = relay("step")
    assert "Waiting for your approval (1-2)" in out.stdout and "codeloop relay approve 1-2" in out.stdout
    assert (workspace / "before.txt").exists() and not (workspace / "log.txt").exists()
    assert not (workspace / "after.txt").exists() and (workspace / "build").is_dir()
    waiting = _outbox(tmp_path, sid, 2)
    assert "[OK] RUN_COMMAND: Ran 'echo before > before.txt' (exit code 0)" in waiting
    assert "[FAILED] RUN_COMMAND: Waiting for the person relaying for you to approve it (approval 1-2: " in waiting
    assert "the 1 command(s) after it wait too" in waiting

    # Nothing else is taken while it waits, not even a new reply.
    _reply(tmp_path, _run("echo sneaky > sneaky.txt"), "later.txt")
    again = as_json(relay("step", "--json"))
    assert again["held"]["id"] == "1-2" and not (workspace / "sneaky.txt").exists()
    assert as_json(relay("status", "--json"))["sessions"][0]["held"]["id"] == "1-2"

    approved = as_json(relay("approve", "1-2", "--json"))
    assert approved["held"] is None and approved["sequence"] == 2
    assert (workspace / "log.txt").read_text() == "ran\n" and not (workspace / "build").exists()
    assert (workspace / "after.txt").exists()
    final = _outbox(tmp_path, sid, 2)
    assert "[OK] RUN_COMMAND: Ran 'echo ran >> log.txt && rm -rf build' (exit code 0)" in final
    assert "Waiting" not in final

    twice = relay("approve", "1-2", check=False)
    assert twice.returncode == 1 and "nothing waits under '1-2'" in twice.stderr
    assert "Traceback" not in twice.stderr
    relay("step")  # now the later reply is applied
    assert (workspace / "sneaky.txt").exists() and (workspace / "log.txt").read_text() == "ran\n"


def test_denied_command_never_runs_and_the_outbox_gives_the_reason(relay: Run, tmp_path: Path) -> None:
    sid = as_json(relay("new", "task", "--policy", "standard", "--json"))["sessionId"]
    workspace = _root(tmp_path) / "workspace"
    _reply(tmp_path, _run(HELD_LINE) + _run("echo after > after.txt"))
    relay("step")
    denied = relay("deny", "1-1", "--reason", "keep the build")
    assert "Next outbox" in denied.stdout
    assert not (workspace / "log.txt").exists() and (workspace / "after.txt").exists()
    assert ("[FAILED] RUN_COMMAND: Not run: the person relaying for you denied it: keep the build\n"
            in _outbox(tmp_path, sid, 2))
    late = relay("approve", "1-1", check=False)
    assert late.returncode == 1 and not (workspace / "log.txt").exists()
    session = json.loads((_root(tmp_path) / "sessions" / f"{sid}.json").read_text())
    assert session["policy"] == "standard" and session["heldCommand"] is None


def test_unknown_policy_is_a_clear_error(relay: Run) -> None:
    bad = relay("new", "task", "--policy", "lenient", check=False)
    assert bad.returncode == 1 and "policy must be one of restrictive, standard, permissive" in bad.stderr


# Paths are judged where their links lead (issue 30): a reply cannot read a secret through a
# link to it, nor plant a git hook through a link to .git.

SECRET = "API_KEY=sk-live-0123456789"


def test_a_link_to_the_env_file_does_not_paste_the_secret_into_the_outbox(relay: Run, tmp_path: Path) -> None:
    sid = as_json(relay("new", "task", "--policy", "standard", "--json"))["sessionId"]
    workspace = _root(tmp_path) / "workspace"
    (workspace / ".env").write_text(SECRET + "\n")
    (workspace / "notes.txt").symlink_to(".env")
    _reply(tmp_path, '[READ_FILE path="notes.txt"]\n')
    relay("step")
    second = _outbox(tmp_path, sid, 2)
    assert SECRET not in second
    assert "[FAILED] READ_FILE: Not run: the relay policy 'standard' refuses it" in second


def test_a_link_swapped_in_after_the_check_is_not_read_either(relay: Run, tmp_path: Path) -> None:
    sid = as_json(relay("new", "task", "--policy", "standard", "--json"))["sessionId"]
    workspace = _root(tmp_path) / "workspace"
    (workspace / ".env").write_text(SECRET + "\n")
    (workspace / "x").symlink_to(".env")  # the user's own link
    (workspace / "notes.txt").write_text("plain notes\n")
    # READ_FILE passes on a plain file; the next command of the same reply makes it a link
    # before the outbox is written.
    _reply(tmp_path, '[READ_FILE path="notes.txt"]\n' + _run("rm notes.txt; ln -s x notes.txt"))
    relay("step")
    second = _outbox(tmp_path, sid, 2)
    assert SECRET not in second


def test_a_link_to_git_does_not_let_a_reply_plant_a_hook(relay: Run, tmp_path: Path) -> None:
    sid = as_json(relay("new", "task", "--policy", "standard", "--json"))["sessionId"]
    workspace = _root(tmp_path) / "workspace"
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (workspace / "g").symlink_to(".git")
    _reply(tmp_path, '[CREATE_FILE path="g/hooks/pre-commit"]\n#!/bin/sh\ntouch pwned\n[/CREATE_FILE]\n'
                     '[EDIT_FILE path="g/config" start_line="1" end_line="2"]\n[core]\n\tfsmonitor = touch pwned\n[/EDIT_FILE]\n')
    relay("step")
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert "fsmonitor" not in (workspace / ".git" / "config").read_text()
    second = _outbox(tmp_path, sid, 2)
    assert "[FAILED] CREATE_FILE: Not run: the relay policy 'standard' refuses it" in second
    assert "[FAILED] EDIT_FILE: Not run: the relay policy 'standard' refuses it" in second
