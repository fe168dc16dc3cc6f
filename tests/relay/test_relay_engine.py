"""The relay engine in-process: outbox context, damaged state files, the clipboard."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import time
from pathlib import Path

import pytest

from codeloop.relay.clipboard import copy_file_to_clipboard, find_clipboard_tool
from codeloop.relay.config import RelayConfig, load_config
from codeloop.relay.engine import RelayError, resume, start_session, step
from codeloop.relay.session import list_sessions


def _start(tmp_path: Path, **settings: object) -> tuple[RelayConfig, str]:
    config = load_config(str(tmp_path / "root"), settings, environ={})
    state, _ = asyncio.run(start_session(config, "task"))
    return config, state.session_id


def _answer(config: RelayConfig, text: str) -> str:
    (config.inbox_dir / "r.txt").write_text(text)
    report = asyncio.run(step(config))
    return (config.outbox_dir / report.session.outbox_name()).read_text()


def test_listing_skips_vcs_internals_and_is_sorted(tmp_path: Path) -> None:
    ws = tmp_path / "root" / "workspace"
    (ws / ".git" / "objects").mkdir(parents=True)
    (ws / ".git" / "objects" / "ab").write_text("x")
    (ws / "b.txt").write_text("bb")
    (ws / "a").mkdir()
    (ws / "a" / "z.py").write_text("")
    (ws / ".env.example").write_text("K=\n")
    config = load_config(str(tmp_path / "root"), environ={})
    _, path = asyncio.run(start_session(config, "task"))
    text = path.read_text()
    assert (
        "## Workspace Files\n  .env.example (3 bytes)\n  a/z.py (0 bytes)\n  b.txt (2 bytes)\n  (not listed: .git/)\n"
        in text
    )


def test_listing_limit_counts_the_rest(tmp_path: Path) -> None:
    ws = tmp_path / "root" / "workspace"
    ws.mkdir(parents=True)
    for i in range(5):
        (ws / f"f{i}.txt").write_text("x")
    config = load_config(str(tmp_path / "root"), {"max_listed_files": 2}, environ={})
    _, path = asyncio.run(start_session(config, "task"))
    assert "  f0.txt (1 bytes)\n  f1.txt (1 bytes)\n  ... and 3 more files" in path.read_text()


def test_requested_binary_and_long_files_get_notes(tmp_path: Path) -> None:
    config, _ = _start(tmp_path, max_read_chars=50)
    ws = Path(asyncio.run(resume(config))[0].workspace)
    (ws / "blob.bin").write_bytes(b"\x00\xff" * 10)
    (ws / "long.txt").write_text("".join(f"line {i}\n" for i in range(100)))
    text = _answer(config, '[READ_FILE path="blob.bin"]\n[READ_FILE path="long.txt"]\n')
    assert "--- blob.bin ---\n(binary file, 20 bytes; not shown)\n--- end blob.bin ---" in text
    assert "--- long.txt ---\nline 0\n" in text
    assert "[... file truncated: showing 50 of 790 characters" in text
    assert "line 99" not in text


def test_file_deleted_after_read_request_is_noted(tmp_path: Path) -> None:
    config, _ = _start(tmp_path)
    text = _answer(
        config,
        '[CREATE_FILE path="t.txt"]\nx\n[/CREATE_FILE]\n[READ_FILE path="t.txt"]\n[DELETE_FILE path="t.txt"]\n',
    )
    assert "--- t.txt ---\n(this file no longer exists)\n--- end t.txt ---" in text
    assert "[OK] DELETE_FILE: Deleted 't.txt'" in text


def test_directory_targets_fail_clearly(tmp_path: Path) -> None:
    config, _ = _start(tmp_path)
    text = _answer(
        config,
        '[CREATE_FILE path="d/x.txt"]\nx\n[/CREATE_FILE]\n[DELETE_FILE path="d"]\n[READ_FILE path="d"]\n'
        '[CREATE_FILE path="d"]\ny\n[/CREATE_FILE]\n',
    )
    assert "[FAILED] DELETE_FILE: 'd' is a directory; DELETE_FILE removes files" in text
    assert "[FAILED] READ_FILE: 'd' is a directory" in text
    assert "[FAILED] CREATE_FILE: 'd' is a directory, not a file" in text


def test_damaged_session_file_is_named_in_the_error(tmp_path: Path) -> None:
    config, sid = _start(tmp_path)
    (config.sessions_dir / f"{sid}.json").write_text('{"sessionId": "oops"}')
    with pytest.raises(RelayError, match=f"{sid}.json is damaged"):
        asyncio.run(step(config, sid))
    assert any(isinstance(s, ValueError) for s in list_sessions(config.sessions_dir))


def test_damaged_journal_sets_the_reply_aside_with_a_note_naming_it_and_the_next_reply_applies(
        tmp_path: Path) -> None:
    config, sid = _start(tmp_path)
    config.journal_dir.mkdir(parents=True, exist_ok=True)
    (config.journal_dir / f"{sid}_seq0001.jsonl").write_text('{"sessionId": "x"}\n{not json\n{"index": 0}\n')
    (config.inbox_dir / "r.txt").write_text("[MESSAGE]\nhi\n[/MESSAGE]\n")
    report = asyncio.run(step(config))
    moved = config.rejected_dir / f"{sid}_seq0001__r.txt"
    assert report.replies == 0 and moved.exists() and list(config.processing_dir.iterdir()) == []
    assert re.search(r"step journal .* is damaged at line 2", (moved.parent / (moved.name + ".note")).read_text())
    (config.inbox_dir / "again.txt").write_text("[MESSAGE]\nhi again\n[/MESSAGE]\n")
    assert asyncio.run(step(config)).replies == 1  # the damaged journal was moved aside with the reply


def test_empty_reply_file_is_left_for_later(tmp_path: Path) -> None:
    config, _ = _start(tmp_path)
    (config.inbox_dir / "r.txt").write_text("  \n")
    report = asyncio.run(step(config))
    assert report.replies == 0 and not report.blocked
    assert (config.inbox_dir / "r.txt").exists()


def test_non_utf8_reply_is_moved_aside_with_a_note_and_later_replies_proceed(tmp_path: Path) -> None:
    config, sid = _start(tmp_path, clipboard=False)
    bad, good = config.inbox_dir / "a.txt", config.inbox_dir / "b.txt"
    bad.write_bytes(b"[MESSAGE]\n\xff\xfe\xfa broken\n[/MESSAGE]\n\x80")
    good.write_text("[MESSAGE]\nstill heard\n[/MESSAGE]\n")
    os.utime(bad, (1, 1))  # the bad one is the oldest: it comes first
    report = asyncio.run(step(config))
    assert report.replies == 1 and not report.blocked
    moved = config.inbox_dir / "rejected" / f"{sid}_seq0001__a.txt"
    assert not bad.exists() and moved.read_bytes().startswith(b"[MESSAGE]\n\xff")
    assert "not UTF-8" in (moved.parent / (moved.name + ".note")).read_text()
    skipped = [e for e in report.events if e.kind == "reply_skipped"]
    assert len(skipped) == 1 and str(moved) in skipped[0].reason
    assert [e.text for e in report.events if e.kind == "model_message"] == ["still heard"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state  # a zombie is dead, waiting for its reaper


def test_timeout_message_is_true_for_a_child_that_left_the_process_group(tmp_path: Path) -> None:
    config, _ = _start(tmp_path, timeout=1, clipboard=False)
    ws = Path(asyncio.run(resume(config))[0].workspace)
    (config.inbox_dir / "r.txt").write_text(
        "[RUN_COMMAND]\nsetsid sh -c 'echo $$ > escaped.pid; exec sleep 300' >/dev/null 2>&1 &\n"
        "while [ ! -s escaped.pid ]; do :; done; sleep 300\n[/RUN_COMMAND]\n")
    report = asyncio.run(step(config))
    summary = next(e.result.summary for e in report.events if e.kind == "command_finished")
    assert "timed out" in summary and "stopped with all its child processes" in summary
    pid = int((ws / "escaped.pid").read_text())
    for _ in range(500):  # SIGKILL was sent before step returned; the kernel finishes it at once
        if not _alive(pid):
            break
        time.sleep(0.01)
    assert not _alive(pid), f"the setsid child {pid} outlived the timeout"


def test_clipboard_tool_receives_the_outbox(tmp_path: Path) -> None:
    # No X server or clipboard tool exists here, so a stand-in ``xclip`` script plays the
    # tool: it is a real process started through the real runner, reading stdin.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sink = tmp_path / "clipboard.txt"
    tool = bin_dir / "xclip"
    tool.write_text(f"#!/bin/sh\ncat > {sink}\necho noise\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    outbox = tmp_path / "outbox.txt"
    outbox.write_text("=== HEADER ===\nSession: x\n")
    environ = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "DISPLAY": ":0"}
    assert find_clipboard_tool(environ) == [str(tool), "-selection", "clipboard", "-in"]
    assert asyncio.run(copy_file_to_clipboard(outbox, environ)) == "xclip"
    assert sink.read_text() == outbox.read_text()
    assert find_clipboard_tool({"PATH": str(bin_dir)}) is None  # no DISPLAY: X11 tools are useless


def test_missing_workspace_stops_before_taking_the_reply(tmp_path: Path) -> None:
    config, _ = _start(tmp_path)
    (config.inbox_dir / "r.txt").write_text('[CREATE_FILE path="a"]\nx\n[/CREATE_FILE]\n')
    config.workspace.rmdir()
    with pytest.raises(RelayError, match="does not exist any more; restore it"):
        asyncio.run(step(config))
    assert (config.inbox_dir / "r.txt").exists()


def test_an_approval_saved_before_a_crash_runs_the_held_command_once_on_the_next_step(tmp_path: Path) -> None:
    from codeloop.relay.approvals import approvals_store

    config, _ = _start(tmp_path, policy="standard")
    ws = tmp_path / "root" / "workspace"
    (config.inbox_dir / "r.txt").write_text("[RUN_COMMAND]\necho ran >> log.txt; rm -rf build\n[/RUN_COMMAND]\n")
    held = asyncio.run(step(config)).session.held
    assert held is not None and approvals_store().get(held.pending).status == "pending"
    assert not (ws / "log.txt").exists()
    # `relay approve` decides in the store first; here the process died right after that.
    approvals_store().decide(held.pending, "approve", "alice")
    after = asyncio.run(step(config)).session
    assert after.held is None and after.sequence_number == 2
    asyncio.run(step(config))
    asyncio.run(resume(config))
    assert (ws / "log.txt").read_text() == "ran\n"


def test_an_approved_command_claimed_by_a_step_that_died_before_journaling_is_never_run(tmp_path: Path) -> None:
    from codeloop.relay.approvals import approvals_store

    config, sid = _start(tmp_path, policy="standard")
    ws = tmp_path / "root" / "workspace"
    (config.inbox_dir / "r.txt").write_text("[RUN_COMMAND]\necho ran >> log.txt; rm -rf build\n[/RUN_COMMAND]\n")
    held = asyncio.run(step(config)).session.held
    assert held is not None
    store = approvals_store()
    store.decide(held.pending, "approve", "alice")
    assert store.claim(held.pending)  # the step that took it to run died before its journal said so
    after = asyncio.run(step(config)).session
    assert after.held is None and not (ws / "log.txt").exists()
    assert "Not run again: the relay stopped after this approved command was taken to run" in (
        config.outbox_dir / f"{sid}_seq0002.txt").read_text()
    assert store.get(held.pending).status == "interrupted"
