"""benchmarks/drafts_oracle.py: the strategy's session logs replayed, each draft checked alone
with the task's hidden check (issue 33's pass@N and choice accuracy on a task run). No model:
the session log is written here the way the strategy writes it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codeloop.environments.sandbox import probe_bwrap

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import drafts_oracle as oracle  # noqa: E402


def _task(tmp_path: Path) -> Path:
    """A task: ``greet.py`` must print ``hello``."""
    task = tmp_path / "tasks" / "01_greet"
    (task / "setup").mkdir(parents=True)
    (task / "setup" / "greet.py").write_text("print('bye')\n")
    (task / "check.sh").write_text('test "$(python3 greet.py)" = hello\n')
    return task


def _log(tmp_path: Path, events: list[tuple[str, dict[str, object]]]) -> Path:
    path = tmp_path / "sessions" / "s.jsonl"
    path.parent.mkdir(exist_ok=True)
    lines = [{"kind": "session_start", "data": {"working_directory": "/tmp/codeloop-tasks/01_greet"}}]
    lines += [{"kind": kind, "data": data} for kind, data in events]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def _say(message: str) -> tuple[str, dict[str, object]]:
    return "warning", {"message": message, "code": "small_model"}


def _draft(text: str) -> tuple[str, dict[str, object]]:
    return "assistant_text_end", {"text": text}


def _write(call_id: str, path: str, content: str) -> list[tuple[str, dict[str, object]]]:
    return [("tool_call_start", {"tool_name": "write_file", "call_id": call_id,
                                 "arguments": {"file_path": path, "content": content}}),
            ("tool_call_end", {"call_id": call_id, "tool_name": "write_file", "output": "Wrote", "error": None})]


WRONG = "FILE greet.py\n```python\nprint('hi')\n```\n"
RIGHT = "FILE greet.py\n```python\nprint('hello')\n```\n"


def test_a_passing_sample_the_choice_passed_over_shows_as_a_missed_choice(tmp_path: Path) -> None:
    task = _task(tmp_path)
    log = _log(tmp_path, [
        _say("drafting"), _draft(WRONG), _say("draft 1: 1 of 1 checks failed"),
        _say("drafting candidate 2 of 3"), _draft(RIGHT), _say("drafting candidate 3 of 3"), _draft(WRONG),
        _say("chose draft 3 of 3"), *_write("c1", "greet.py", "print('hi')\n"),
        _say("drafting the next step"), _draft("DONE"),
    ])
    session = oracle.read_session(log)
    assert session is not None and session.task == "01_greet"
    row = oracle.oracle(session, task, tmp_path / "scratch")
    assert row["drafts"] == 3  # DONE is not a candidate
    assert row["passing"] == 1 and row["any_passing"] and not row["greedy_passing"]
    assert (row["chosen_steps_with_passing"], row["chosen_passing"]) == (1, 0)
    assert not row["replayed_solved"]  # the replay wrote what the session wrote: 'hi'


def test_the_greedy_draft_alone_written_counts_as_chosen_and_the_replay_ends_solved(tmp_path: Path) -> None:
    task = _task(tmp_path)
    log = _log(tmp_path, [_say("drafting"), _draft(RIGHT), _say("draft 1: 1 check passed"),
                          *_write("c1", "greet.py", "print('hello')\n"),
                          _say("drafting the next step"), _draft("DONE")])
    session = oracle.read_session(log)
    assert session is not None
    row = oracle.oracle(session, task, tmp_path / "scratch")
    assert (row["drafts"], row["passing"], row["greedy_passing"]) == (1, 1, True)
    assert (row["chosen_steps_with_passing"], row["chosen_passing"]) == (1, 1)
    assert row["replayed_solved"]


def test_a_draft_that_cannot_be_applied_fails_and_a_log_of_another_agent_is_skipped(tmp_path: Path) -> None:
    task = _task(tmp_path)
    bad = "FILE greet.py\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n"
    log = _log(tmp_path, [_say("drafting"), _draft(bad), _say("draft 1: cannot be applied")])
    session = oracle.read_session(log)
    assert session is not None
    assert oracle.oracle(session, task, tmp_path / "scratch")["passing"] == 0
    other = tmp_path / "sessions" / "other.jsonl"
    other.write_text(json.dumps({"kind": "assistant_text_end", "data": {"text": RIGHT}}) + "\n")
    assert oracle.read_session(other) is None


@pytest.mark.skipif(probe_bwrap() is not None, reason="bubblewrap cannot run here")
def test_a_run_line_is_run_confined_to_the_copy(tmp_path: Path) -> None:
    """A RUN draft runs in bwrap: it can write the copy it runs in, nothing outside it."""
    task = _task(tmp_path)
    outside = tmp_path / "outside.txt"
    run = f"RUN echo \"print('hello')\" > greet.py; echo x > {outside}\n"
    log = _log(tmp_path, [_say("drafting"), _draft(run)])
    session = oracle.read_session(log)
    assert session is not None
    row = oracle.oracle(session, task, tmp_path / "scratch")
    assert row["passing"] == 1
    assert not outside.exists()


def test_a_draft_or_a_logged_write_naming_a_path_outside_the_copy_writes_nothing_there(tmp_path: Path) -> None:
    """Drafts and logged calls are the model's text: replayed, they never reach outside the copy."""
    task = _task(tmp_path)
    escape = "FILE ../../escaped.py\n```python\nx = 1\n```\n"
    log = _log(tmp_path, [_say("drafting"), _draft(escape), _say("chose draft 1 of 1"),
                          *_write("c1", "../../logged.py", "x = 1\n"),
                          ("tool_call_start", {"tool_name": "apply_patch", "call_id": "c2",
                                               "arguments": {"patch": "*** Delete File: ../../keep.txt\n"}}),
                          ("tool_call_end", {"call_id": "c2", "tool_name": "apply_patch", "output": "", "error": None})])
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "keep.txt").write_text("mine\n")
    session = oracle.read_session(log)
    assert session is not None
    row = oracle.oracle(session, task, tmp_path / "scratch" / "deep")
    assert row["passing"] == 0
    assert not (tmp_path / "escaped.py").exists() and not (tmp_path / "logged.py").exists()
    assert not list(tmp_path.rglob("escaped.py")) and not list(tmp_path.rglob("logged.py"))
    assert (tmp_path / "scratch" / "keep.txt").read_text() == "mine\n"
