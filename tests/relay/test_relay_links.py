"""The relay judges paths where their links lead (issue 30), black box: pasted replies and
``codeloop relay step`` under ``--policy standard``.

A reply cannot read a secret through a link to it, nor plant a git hook through a link to
``.git``: the relay's POLICY step sees the workspace root, as spaces' does.
"""

from __future__ import annotations

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
