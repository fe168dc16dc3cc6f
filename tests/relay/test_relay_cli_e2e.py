"""End to end: the installed ``codeloop relay`` command on a temporary root, as a user runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from relay_helpers import CODELOOP, Run, as_json, clean_env


def _root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def _reply(tmp_path: Path, text: str, name: str = "reply.txt", encoding: str = "utf-8") -> Path:
    path = _root(tmp_path) / "inbox" / name
    path.write_bytes(text.encode(encoding))
    return path


def _alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (killed, not yet reaped by init) counts as dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


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


def test_parse_errors_reach_the_model_as_result_lines(relay: Run, tmp_path: Path) -> None:
    sid = _new(relay)["sessionId"]
    _reply(
        tmp_path,
        '[EDIT_FILE path="a.py" start_line="x" end_line="2"]\ny\n[/EDIT_FILE]\n[CREATE_FILE path="b.py"]\nno end\n',
    )
    relay("step")
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "[FAILED] EDIT_FILE: Parse error at line 1: start_line must be a whole line number" in second
    assert (
        "[FAILED] CREATE_FILE: Parse error at line 4: [CREATE_FILE] opened on line 4 is never closed"
        in second
    )


def test_reply_without_commands_is_reported_to_the_model(relay: Run, tmp_path: Path) -> None:
    sid = _new(relay)["sessionId"]
    _reply(tmp_path, "What language should I use?\n")
    relay("step")
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "[FAILED] REPLY: No command blocks were found in your reply." in second


def test_several_replies_are_applied_oldest_first_each_answering_the_next_outbox(
    relay: Run, tmp_path: Path
) -> None:
    sid = _new(relay)["sessionId"]
    first = _reply(tmp_path, "[RUN_COMMAND]\necho one >> log.txt\n[/RUN_COMMAND]\n", "z.txt")
    second = _reply(tmp_path, "[RUN_COMMAND]\necho two >> log.txt\n[/RUN_COMMAND]\n", "a.txt")
    os.utime(first, (1_000_000, 1_000_000))
    os.utime(second, (2_000_000, 2_000_000))
    data = as_json(relay("step", "--json"))
    assert data["replies"] == 2 and data["sequence"] == 3
    assert (_root(tmp_path) / "workspace" / "log.txt").read_text() == "one\ntwo\n"
    processed = sorted(p.name for p in (_root(tmp_path) / "inbox" / "processed").iterdir())
    assert processed == [f"{sid}_seq0001__z.txt", f"{sid}_seq0002__a.txt"]


def test_same_text_pasted_later_for_a_newer_outbox_is_applied_again(relay: Run, tmp_path: Path) -> None:
    _new(relay)
    text = "[RUN_COMMAND]\necho again >> log.txt\n[/RUN_COMMAND]\n"
    _reply(tmp_path, text)
    relay("step")
    _reply(tmp_path, text)
    relay("step")
    assert (_root(tmp_path) / "workspace" / "log.txt").read_text() == "again\nagain\n"


def test_resume_reoffers_current_outbox_keeping_sequence_and_read_requests(
    relay: Run, tmp_path: Path
) -> None:
    sid = _new(relay)["sessionId"]
    _reply(tmp_path, '[CREATE_FILE path="notes.md"]\n# Notes\n[/CREATE_FILE]\n[READ_FILE path="notes.md"]\n')
    relay("step")
    outbox2 = _root(tmp_path) / "outbox" / f"{sid}_seq0002.txt"
    original = outbox2.read_text()
    data = as_json(relay("resume", sid, "--json"))
    assert data["sequence"] == 2 and data["outbox"] == str(outbox2)
    assert data["pendingReadFiles"] == ["notes.md"]
    assert outbox2.read_text() == original
    outbox2.unlink()
    relay("resume")
    rebuilt = outbox2.read_text()
    assert "--- notes.md ---\n# Notes\n--- end notes.md ---" in rebuilt
    assert "[OK] CREATE_FILE: Created 'notes.md'" in rebuilt
    assert not (_root(tmp_path) / "outbox" / f"{sid}_seq0003.txt").exists()
    text = relay("resume").stdout
    assert f"Resumed session {sid} at outbox #2" in text and str(outbox2) in text


def test_resume_makes_an_older_session_active(relay: Run, tmp_path: Path) -> None:
    old = _new(relay, "first task")["sessionId"]
    new = _new(relay, "second task")["sessionId"]
    assert as_json(relay("status", "--json"))["active"] == new
    relay("resume", old)
    assert as_json(relay("status", "--json"))["active"] == old
    _reply(tmp_path, "[MESSAGE]\nfor the old one\n[/MESSAGE]\n")
    assert as_json(relay("step", "--json"))["sessionId"] == old


def test_edit_keeps_crlf_and_missing_final_newline_and_rejects_range_past_end(
    relay: Run, tmp_path: Path
) -> None:
    sid = _new(relay)["sessionId"]
    target = _root(tmp_path) / "workspace" / "win.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree")
    _reply(
        tmp_path,
        '[EDIT_FILE path="win.txt" start_line="3" end_line="3"]\nTHREE\nFOUR\n[/EDIT_FILE]\n'
        '[EDIT_FILE path="win.txt" start_line="2" end_line="9"]\nnope\n[/EDIT_FILE]\n',
    )
    relay("step")
    assert target.read_bytes() == b"one\r\ntwo\r\nTHREE\r\nFOUR"
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert (
        "[FAILED] EDIT_FILE: Invalid line range 2-9 for 'win.txt': end_line 9 is past the end of the file, which has 4 lines"
        in second
    )


def test_paths_outside_workspace_are_rejected_including_symlinks(relay: Run, tmp_path: Path) -> None:
    sid = _new(relay)["sessionId"]
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    (_root(tmp_path) / "workspace" / "link").symlink_to(tmp_path)
    _reply(
        tmp_path,
        '[CREATE_FILE path="../escape.txt"]\nx\n[/CREATE_FILE]\n'
        '[READ_FILE path="link/secret.txt"]\n'
        '[DELETE_FILE path="/etc/hostname"]\n',
    )
    relay("step")
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert second.count("REJECTED: Path is outside workspace") == 3
    assert "top secret" not in second
    assert not (_root(tmp_path) / "escape.txt").exists()


def test_hung_command_with_open_pipes_times_out_and_its_group_is_killed(relay: Run, tmp_path: Path) -> None:
    sid = _new(relay)["sessionId"]
    pid_file = tmp_path / "child.pid"
    _reply(
        tmp_path,
        f"[RUN_COMMAND]\n(echo $$ > /dev/null; sh -c 'echo $$ > {pid_file}; exec sleep 60') &\necho started\nsleep 60\n"
        "[/RUN_COMMAND]\n",
    )
    start = time.monotonic()
    relay("step", "--timeout", "1")
    assert time.monotonic() - start < 20
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "[FAILED] RUN_COMMAND:" in second and "timed out after 1 s" in second
    assert "Output: started" in second
    assert not _alive(int(pid_file.read_text()))


def test_command_output_is_truncated_to_the_configured_limit(relay: Run, tmp_path: Path) -> None:
    sid = _new(relay)["sessionId"]
    _reply(tmp_path, "[RUN_COMMAND]\nseq 1 20000\n[/RUN_COMMAND]\n")
    relay("step", env=clean_env(CODELOOP_RELAY_OUTPUT_LIMIT="300"))
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    output = second.split("  Output:\n", 1)[1].split("\n\n", 1)[0]
    assert "characters of output omitted" in output
    assert "    1\n" in output and output.rstrip().endswith("20000")
    assert len(output.replace("\n    ", "\n")) < 400


def test_non_utf8_reply_is_left_in_inbox_with_a_clear_error(relay: Run, tmp_path: Path) -> None:
    _new(relay)
    bad = _reply(tmp_path, "")
    bad.write_bytes(b"[MESSAGE]\n\xff\xfe\xfa broken\n[/MESSAGE]\n\x80")
    out = relay("step", check=False)
    assert out.returncode == 1
    assert "not UTF-8" in out.stderr and "Traceback" not in out.stderr
    assert bad.exists()


def test_utf16_reply_from_notepad_is_read(relay: Run, tmp_path: Path) -> None:
    _new(relay)
    _reply(tmp_path, '\ufeff[CREATE_FILE path="é.txt"]\nünïcode\n[/CREATE_FILE]\n', encoding="utf-16-le")
    relay("step")
    assert (_root(tmp_path) / "workspace" / "é.txt").read_text() == "ünïcode\n"


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
    sid = _new(relay, "Write docs")["sessionId"]
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
        deadline = time.monotonic() + 30
        while not list((root / "outbox").glob("*_seq0002.txt")):
            assert time.monotonic() < deadline and proc.poll() is None, "watch did not step the reply"
            time.sleep(0.1)
        (root / "inbox" / "r2.txt").write_text("[DONE]\nwatched it\n[/DONE]\n")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err
    assert (root / "workspace" / "w.txt").read_text() == "watched\n"
    assert "[OK] CREATE_FILE: Created 'w.txt'" in out
    assert "_seq0002.txt" in out and "complete" in out and "watched it" in out
