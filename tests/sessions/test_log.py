"""The JSONL session log: durable appends, torn lines, index, history rebuild."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.history import AssistantTurn, SteeringTurn, ToolResultsTurn, UserTurn
from codeloop.sessions import (
    SessionLog,
    SessionLogWarning,
    SessionNotFoundError,
    latest_session,
    list_sessions,
    load_events,
    rebuild_history,
    to_markdown,
)
from codeloop.sessions.log import parse_log

SID = "s1"


def write_session(sid: str, workspace: str, task: str = "fix the bug", *, end: bool = True) -> None:
    with SessionLog(sid) as log:
        log.append(ev.SessionStart(session_id=sid, profile="openai", model="m1", working_directory=workspace))
        log.append(ev.UserInput(session_id=sid, content=task))
        log.append(ev.AssistantTextStart(session_id=sid))
        log.append(ev.AssistantTextDelta(session_id=sid, delta="Let me "))
        log.append(ev.AssistantTextEnd(session_id=sid, text="Let me look.", tool_call_count=2))
        log.append(ev.ToolCallStart(session_id=sid, tool_name="read_file", call_id="c1",
                                    arguments={"file_path": "a.py"}))
        log.append(ev.ToolCallOutputDelta(session_id=sid, call_id="c1", delta="x"))
        log.append(ev.ToolCallEnd(session_id=sid, tool_name="read_file", call_id="c1", output="print(1)\n"))
        log.append(ev.ToolCallStart(session_id=sid, tool_name="shell", call_id="c2", arguments={"command": "false"}))
        log.append(ev.ToolCallEnd(session_id=sid, tool_name="shell", call_id="c2", error="exit code 1"))
        log.append(ev.SteeringInjected(session_id=sid, content="also add a test"))
        log.append(ev.AssistantTextStart(session_id=sid))
        log.append(ev.AssistantTextEnd(session_id=sid, text="Done."))
        if end:
            log.append(ev.SessionEnd(session_id=sid, state="closed", reason="completed", final_text="Done."))


def test_each_event_is_one_wire_line_and_deltas_are_not_recorded(state_dir: Path) -> None:
    write_session(SID, "/w")
    lines = (state_dir / "sessions" / f"{SID}.jsonl").read_text().splitlines()
    objs = [json.loads(line) for line in lines]
    assert [o["kind"] for o in objs][:3] == ["session_start", "user_input", "assistant_text_start"]
    assert all(set(o) == {"kind", "timestamp", "session_id", "data"} for o in objs)
    assert not any(o["kind"].endswith("_delta") for o in objs)
    assert objs[1]["data"] == {"content": "fix the bug"}


def test_torn_last_line_is_ignored_with_a_warning_and_cut_before_next_append(state_dir: Path) -> None:
    write_session(SID, "/w", end=False)
    path = state_dir / "sessions" / f"{SID}.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"kind": "user_input", "timest')
    with pytest.warns(SessionLogWarning, match=r"s1\.jsonl:12: torn last line"):
        events = load_events(SID)
    assert len(events) == 11
    with SessionLog(SID) as log:
        log.append(ev.UserInput(session_id=SID, content="next"))
    events = load_events(SID)
    assert [e.data.get("content") for e in events[-1:]] == ["next"]
    assert len(events) == 12


def test_unknown_session_is_a_clear_error() -> None:
    with pytest.raises(SessionNotFoundError, match="codeloop sessions list"):
        load_events("nope")
    with pytest.raises(ValueError, match="invalid session id"):
        load_events("../etc")


def test_index_lists_sessions_with_workspace_status_and_task(tmp_path: Path) -> None:
    write_session("a", str(tmp_path), "task A")
    time.sleep(0.01)
    write_session("b", str(tmp_path), "task B", end=False)
    write_session("c", "/elsewhere", "task C")
    infos = {i.id: i for i in list_sessions()}
    assert set(infos) == {"a", "b", "c"}
    assert infos["a"].status == "completed" and infos["b"].status == "interrupted"
    assert infos["a"].first_input == "task A" and infos["a"].model == "m1"
    assert [i.id for i in list_sessions(tmp_path)] == ["a", "b"]
    latest = latest_session(tmp_path)
    assert latest is not None and latest.id == "b"
    assert latest_session(tmp_path / "none") is None


def test_rebuild_history_gives_the_turns_to_continue() -> None:
    write_session(SID, "/w")
    turns = rebuild_history(load_events(SID))
    assert isinstance(turns[0], UserTurn) and turns[0].content == "fix the bug"
    first = turns[1]
    assert isinstance(first, AssistantTurn) and first.content == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("c1", "read_file", {"file_path": "a.py"}), ("c2", "shell", {"command": "false"})]
    results = turns[2]
    assert isinstance(results, ToolResultsTurn)
    assert [(r.content, r.is_error) for r in results.results] == [("print(1)\n", False), ("exit code 1", True)]
    assert isinstance(turns[3], SteeringTurn) and turns[3].content == "also add a test"
    assert isinstance(turns[4], AssistantTurn) and turns[4].content == "Done." and not turns[4].tool_calls
    assert len(turns) == 5


def test_rebuild_answers_calls_cut_off_by_a_crash_with_an_error() -> None:
    with SessionLog(SID) as log:
        log.append(ev.UserInput(session_id=SID, content="go"))
        log.append(ev.AssistantTextEnd(session_id=SID, text="", tool_call_count=1))
        log.append(ev.ToolCallStart(session_id=SID, tool_name="shell", call_id="c9", arguments={"command": "sleep 99"}))
    turns = rebuild_history(load_events(SID))
    results = turns[-1]
    assert isinstance(results, ToolResultsTurn)
    assert results.results[0].is_error and "interrupted" in results.results[0].content


def test_rebuilt_tool_output_is_truncated_like_the_model_saw_it() -> None:
    big = "line\n" * 100_000
    with SessionLog(SID) as log:
        log.append(ev.AssistantTextEnd(session_id=SID, text="", tool_call_count=1))
        log.append(ev.ToolCallStart(session_id=SID, tool_name="shell", call_id="c1", arguments={}))
        log.append(ev.ToolCallEnd(session_id=SID, tool_name="shell", call_id="c1", output=big))
    results = rebuild_history(load_events(SID))[-1]
    assert isinstance(results, ToolResultsTurn)
    assert len(results.results[0].content) < len(big)


def test_markdown_export_shows_inputs_replies_and_tool_calls() -> None:
    write_session(SID, "/w")
    md = to_markdown(SID, load_events(SID))
    assert "## User\n\nfix the bug" in md
    assert "### Tool call `shell`" in md and '"command": "false"' in md
    assert "Result (error):" in md and "ended" in md
    assert "## Assistant (turn 1)\n\nLet me look." in md and "## Assistant (turn 2)\n\nDone." in md



def test_markdown_export_shows_who_answered_a_waiting_call_and_why() -> None:
    """Decisions are events of the session log (issue 34), and the export says them."""
    with SessionLog(SID) as log:
        log.append(ev.ApprovalPending(session_id=SID, call_id="c1", pending_id="p1", tool_name="shell",
                                      summary="rm a", reason="runs rm", grants=["once", "always"], remember_as=["rm"]))
        log.append(ev.ApprovalDecided(session_id=SID, call_id="c1", pending_id="p1", tool_name="shell",
                                      status="denied", decided_by="alice@host", reason="keep it"))
    md = to_markdown(SID, load_events(SID))
    assert "> waiting for approval (runs rm): pending call p1" in md
    assert "> denied by alice@host: keep it" in md


WRITER = textwrap.dedent("""
    import sys
    from codeloop.agent import events as ev
    from codeloop.sessions import SessionLog
    log = SessionLog("crash")
    i = 0
    while True:
        log.append(ev.UserInput(session_id="crash", content="x" * 5000 + str(i)))
        i += 1
        if i == 20:
            print("ready", flush=True)
""")


def test_kill_9_mid_stream_loses_at_most_the_line_being_written(state_dir: Path) -> None:
    env = {**os.environ, "CODELOOP_STATE_DIR": str(state_dir)}
    proc = subprocess.Popen([sys.executable, "-c", WRITER], env=env, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        events = load_events("crash")
    assert len(events) >= 20
    assert [e.data["content"][5000:] for e in events] == [str(i) for i in range(len(events))]
    raw = (state_dir / "sessions" / "crash.jsonl").read_bytes()
    assert raw.count(b"\n") - len(events) == 0  # at most a torn tail without newline beyond them


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_parse_log_never_raises_on_arbitrary_bytes(raw: bytes) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        events = parse_log(raw, "x")
    assert all(isinstance(e.data, dict) for e in events)


def test_listener_reports_a_write_failure_once_and_never_raises() -> None:
    errors: list[Exception] = []
    log = SessionLog(SID)
    record = log.listener(errors.append)
    record(ev.UserInput(session_id=SID, content="kept"))
    assert log._fd is not None
    os.close(log._fd)  # the descriptor goes bad under the writer, as on a lost file system
    record(ev.UserInput(session_id=SID, content="lost"))
    record(ev.UserInput(session_id=SID, content="lost too"))
    assert len(errors) == 1 and isinstance(errors[0], OSError)
    assert [e.data["content"] for e in load_events(SID)] == ["kept"]
    log._fd = None
