"""End to end: the installed ``codeloop relay`` command on a temporary root, as a user runs it."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import pytest
from relay_helpers import CODELOOP, Run, as_json, clean_env

from codeloop.relay.config import RelayConfig, load_config
from codeloop.relay.engine import find_session, start_session, step


def _root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def _reply(tmp_path: Path, text: str, name: str = "reply.txt", encoding: str = "utf-8") -> Path:
    path = _root(tmp_path) / "inbox" / name
    path.write_bytes(text.encode(encoding))
    return path


def _new_in_process(tmp_path: Path, task: str = "Create a calculator app") -> tuple[RelayConfig, str]:
    """Set-up without the CLI, for tests of another command."""
    config = load_config(str(_root(tmp_path)), environ={})
    state, _ = asyncio.run(start_session(config, task))
    return config, state.session_id


def _new(relay: Run, task: str = "Create a calculator app") -> dict[str, str]:
    data: dict[str, str] = as_json(relay("new", task, "--json"))
    return data


def test_new_writes_first_outbox_with_task_and_empty_workspace(relay: Run, tmp_path: Path) -> None:
    data = _new(relay)
    sid = data["sessionId"]
    outbox = Path(data["outbox"])
    assert outbox == _root(tmp_path) / "outbox" / f"{sid}_seq0001.txt"
    text = outbox.read_text()
    assert text.startswith(f"=== HEADER ===\nSession: {sid}\nSequence: 1\nTask: Create a calculator app\n")
    assert "## Workspace Files\n(empty workspace)" in text
    assert text.endswith("=== PROMPT ===\nCreate a calculator app\n")
    assert Path(data["workspace"]) == _root(tmp_path) / "workspace"
    session = (_root(tmp_path) / "sessions" / f"{sid}.json").read_text()
    assert '"sequenceNumber": 1' in session and '"isComplete": false' in session


def test_full_session_new_step_through_done(relay: Run, tmp_path: Path) -> None:
    sid = _new(relay)["sessionId"]
    _reply(
        tmp_path,
        "Plan: create, run, read.\n"
        '[CREATE_FILE path="src/calc.py"]\ndef add(a, b):\n    return a + b\n[/CREATE_FILE]\n'
        "[RUN_COMMAND]\npython3 -c 'import sys; sys.path.insert(0, \"src\"); import calc; print(calc.add(2, 3))'\n"
        "[/RUN_COMMAND]\n"
        '[READ_FILE path="src/calc.py"]\n'
        '[EDIT_FILE path="src/missing.py" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]\n',
    )
    out = relay("step")
    assert "[OK] CREATE_FILE: Created 'src/calc.py'" in out.stdout
    assert f"{sid}_seq0002.txt" in out.stdout and "paste it into your chat model" in out.stdout
    workspace = _root(tmp_path) / "workspace"
    assert (workspace / "src/calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "Sequence: 2\n" in second
    assert "## Workspace Files\n  src/calc.py (32 bytes)\n" in second
    assert "[OK] CREATE_FILE: Created 'src/calc.py'\n" in second
    assert "(exit code 0)\n  Output: 5\n" in second
    assert "[FAILED] EDIT_FILE: File 'src/missing.py' not found\n" in second
    assert "--- src/calc.py ---\ndef add(a, b):\n    return a + b\n--- end src/calc.py ---" in second
    assert second.endswith("Continue working on the task based on the results above. "
                           "If the task is complete, send [DONE] with a summary.\n")  # fmt: skip
    assert not (_root(tmp_path) / "inbox" / "reply.txt").exists()
    assert (_root(tmp_path) / "inbox" / "processed" / f"{sid}_seq0001__reply.txt").exists()

    _reply(
        tmp_path,
        '[EDIT_FILE path="src/calc.py" start_line="2" end_line="2"]\n    return b + a\n[/EDIT_FILE]\n',
    )
    relay("step")
    assert (workspace / "src/calc.py").read_text() == "def add(a, b):\n    return b + a\n"

    _reply(
        tmp_path,
        'All good.\n[DONE]\nCreated src/calc.py with add().\n[/DONE]\n[DELETE_FILE path="src/calc.py"]\n',
    )
    done = relay("step")
    assert "Session" in done.stdout and "complete" in done.stdout
    assert "Created src/calc.py with add()." in done.stdout
    assert "1 command(s) after [DONE] were not run" in done.stdout
    assert (workspace / "src/calc.py").exists()
    assert not (_root(tmp_path) / "outbox" / f"{sid}_seq0004.txt").exists()
    status = as_json(relay("status", "--json"))
    assert status["sessions"][0]["complete"] is True and status["active"] is None
    again = relay("step", check=False)
    assert again.returncode == 1
    assert "complete" in again.stderr and "Traceback" not in again.stderr


def test_step_json_reports_events_and_next_outbox(relay: Run, tmp_path: Path) -> None:
    sid = _new(relay)["sessionId"]
    _reply(tmp_path, '[MESSAGE]\nHi there\n[/MESSAGE]\n[READ_FILE path="nope.txt"]\n')
    data = as_json(relay("step", "--json"))
    assert data["sessionId"] == sid and data["sequence"] == 2 and data["replies"] == 1
    assert data["outbox"].endswith(f"{sid}_seq0002.txt")
    kinds = [e["kind"] for e in data["events"]]
    assert kinds == [
        "reply_started",
        "command_finished",
        "model_message",
        "command_finished",
        "outbox_written",
    ]
    assert data["events"][3]["result"] == {
        "command": "READ_FILE",
        "success": False,
        "summary": "File 'nope.txt' not found",
    }


def test_step_without_reply_says_what_to_paste_where(relay: Run, tmp_path: Path) -> None:
    sid = _new(relay)["sessionId"]
    out = relay("step")
    assert f"No reply waiting in {_root(tmp_path) / 'inbox'}/" in out.stdout
    assert f"{sid}_seq0001.txt" in out.stdout and ".txt file in" in out.stdout


def test_resume_reoffers_current_outbox_keeping_sequence_and_read_requests(
    relay: Run, tmp_path: Path
) -> None:
    config, sid = _new_in_process(tmp_path)
    _reply(tmp_path, '[CREATE_FILE path="notes.md"]\n# Notes\n[/CREATE_FILE]\n[READ_FILE path="notes.md"]\n')
    asyncio.run(step(config))
    outbox2 = _root(tmp_path) / "outbox" / f"{sid}_seq0002.txt"
    original = outbox2.read_text()
    data = as_json(relay("resume", sid, "--json"))
    assert data["sequence"] == 2 and data["outbox"] == str(outbox2)
    assert data["pendingReadFiles"] == ["notes.md"]
    assert outbox2.read_text() == original
    outbox2.unlink()
    text = relay("resume").stdout
    assert f"Resumed session {sid} at outbox #2" in text and str(outbox2) in text
    rebuilt = outbox2.read_text()
    assert "--- notes.md ---\n# Notes\n--- end notes.md ---" in rebuilt
    assert "[OK] CREATE_FILE: Created 'notes.md'" in rebuilt
    assert not (_root(tmp_path) / "outbox" / f"{sid}_seq0003.txt").exists()


def test_resume_makes_an_older_session_active(relay: Run, tmp_path: Path) -> None:
    config, old = _new_in_process(tmp_path, "first task")
    _, new = _new_in_process(tmp_path, "second task")
    assert find_session(config).session_id == new
    relay("resume", old)
    assert find_session(config).session_id == old
    _reply(tmp_path, "[MESSAGE]\nfor the old one\n[/MESSAGE]\n")
    assert asyncio.run(step(config)).session.session_id == old


def test_non_utf8_reply_is_moved_aside_with_a_clear_note(relay: Run, tmp_path: Path) -> None:
    _new_in_process(tmp_path)
    bad = _reply(tmp_path, "")
    bad.write_bytes(b"[MESSAGE]\n\xff\xfe\xfa broken\n[/MESSAGE]\n\x80")
    out = relay("step", check=False)
    assert out.returncode == 0
    assert "not UTF-8" in out.stderr and "moved to" in out.stderr and "Traceback" not in out.stderr
    assert not bad.exists() and len(list((bad.parent / "rejected").glob("*.txt"))) == 1


def test_workspace_holding_relay_dirs_is_refused(relay: Run, tmp_path: Path) -> None:
    out = relay("new", "task", "--workspace", str(tmp_path), check=False)
    assert out.returncode == 1
    assert "contains the relay's" in out.stderr and "Traceback" not in out.stderr


def test_no_session_gives_one_line_error(relay: Run, tmp_path: Path) -> None:
    out = relay("step", check=False)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "codeloop relay new" in out.stderr


def test_bad_config_file_gives_one_line_error(relay: Run, tmp_path: Path) -> None:
    _root(tmp_path).mkdir()
    (_root(tmp_path) / "relay.toml").write_text("timeout = 'soon'\n")
    out = relay("new", "task", check=False)
    assert out.returncode == 1
    assert "timeout must be a number of seconds" in out.stderr and "relay.toml" in out.stderr


@pytest.mark.parametrize("command", ["new", "step", "watch", "resume", "status"])
def test_every_command_help_has_an_example(relay: Run, command: str) -> None:
    out = relay(command, "--help", root=False)
    assert "Example: codeloop relay " + command in " ".join(out.stdout.split())


def test_status_lists_sessions_and_pending_replies(relay: Run, tmp_path: Path) -> None:
    _, sid = _new_in_process(tmp_path, "Write docs")
    _reply(tmp_path, "[DONE]\nx\n[/DONE]\n")
    out = relay("status").stdout
    assert f"* {sid}" in out and "Write docs" in out and "1 reply file(s) waiting" in out


def test_watch_applies_replies_as_they_arrive_until_done(tmp_path: Path) -> None:
    root = _root(tmp_path)
    subprocess.run(
        [*CODELOOP, "relay", "new", "watch me", "--root", str(root)],
        check=True,
        capture_output=True,
        env=clean_env(),
    )
    proc = subprocess.Popen(
        [*CODELOOP, "relay", "watch", "--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    try:
        (root / "inbox" / "r1.txt").write_text('[CREATE_FILE path="w.txt"]\nwatched\n[/CREATE_FILE]\n')
        # Wait for watch to print the next outbox, not just to write it: a second reply that
        # lands while the first step runs is applied in the same step, with no "Next outbox".
        assert proc.stdout is not None
        head: list[str] = []
        while not any("_seq0002.txt" in line for line in head):
            line = proc.stdout.readline()
            assert line, "watch ended before it stepped the reply"
            head.append(line)
        (root / "inbox" / "r2.txt").write_text("[DONE]\nwatched it\n[/DONE]\n")
        rest, err = proc.communicate(timeout=30)
        out = "".join(head) + rest
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err
    assert (root / "workspace" / "w.txt").read_text() == "watched\n"
    assert "[OK] CREATE_FILE: Created 'w.txt'" in out
    assert "_seq0002.txt" in out and "complete" in out and "watched it" in out
