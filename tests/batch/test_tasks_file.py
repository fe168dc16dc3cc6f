"""The tasks file of ``codeloop batch``: every problem by line and field, before anything starts."""

from __future__ import annotations

import json
from pathlib import Path

from batch_helpers import CODELOOP, batch_env, run_batch
from hypothesis import given
from hypothesis import strategies as st

from codeloop.batch.tasks import load_tasks, parse_line


def test_every_malformed_line_is_reported_by_line_and_field_and_nothing_starts(tmp_path: Path, model) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join([
        json.dumps({"id": "fine", "instruction": "ok"}),
        json.dumps({"id": "../up", "instruction": "x"}),
        json.dumps({"id": "a", "instruction": "x", "timeout": "soon", "limits": {"max_turns": -1}}),
        "[1, 2]",
        "{not json",
        json.dumps({"id": "fine", "instruction": "again"}),
        json.dumps({"id": "b", "instruction": "x", "workspace": {"dir": "d", "git": "g"}, "color": "red"}),
        json.dumps({"id": "c", "instruction": "x", "limits": {"max_time": "soonish"}}),
    ]) + "\n")
    done = run_batch(tasks, model)
    assert done.returncode == 2, done.stderr
    problems = done.stderr.strip().splitlines()
    prefix = f"{tasks}: "
    assert [p.removeprefix(prefix).split(":")[0] for p in problems] == [
        "line 2", "line 3", "line 3", "line 4", "line 5", "line 6", "line 7", "line 7", "line 8"]
    text = done.stderr
    assert "line 2: id: " in text and "line 3: timeout: " in text and "line 3: limits.max_turns: " in text
    assert "line 4: a task is a JSON object, not list" in text and "line 5: not JSON" in text
    assert "line 6: id: 'fine' is already the id of line 1" in text
    assert "line 7: workspace: Value error, give dir or git, not both" in text and "line 7: color: Extra inputs" in text
    assert "line 8: limits.max_time: " in text and "Traceback" not in text
    assert sum(model.calls.values()) == 0
    assert not (tmp_path / "tasks.results.jsonl").exists() and not (tmp_path / "tasks.results.work").exists()


def test_a_tasks_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    import subprocess

    missing = tmp_path / "none.jsonl"
    done = subprocess.run([CODELOOP, "batch", str(missing)], capture_output=True, text=True, env=batch_env(tmp_path),
                          timeout=60)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "cannot be read" in done.stderr


def test_relative_sources_are_taken_from_the_tasks_file(tmp_path: Path) -> None:
    (tmp_path / "tasks.jsonl").write_text(
        json.dumps({"id": "d", "instruction": "x", "workspace": {"dir": "src"}}) + "\n"
        + json.dumps({"id": "g", "instruction": "x", "workspace": {"git": "repo", "revision": "v1"}}) + "\n"
        + json.dumps({"id": "u", "instruction": "x", "workspace": {"git": "https://example.org/r.git"}}) + "\n")
    d, g, u = load_tasks(tmp_path / "tasks.jsonl")
    assert d.source(tmp_path).directory == tmp_path / "src"
    assert (g.source(tmp_path).git, g.source(tmp_path).revision) == (str(tmp_path / "repo"), "v1")
    assert u.source(tmp_path).git == "https://example.org/r.git"


@given(st.text(max_size=300), st.integers(min_value=1, max_value=10_000))
def test_any_line_is_a_task_or_problems_naming_the_line(text: str, number: int) -> None:
    task, problems = parse_line(text, number)
    assert (task is None) == bool(problems)
    assert all(p.startswith(f"line {number}: ") and "\n" not in p for p in problems)


@given(st.dictionaries(st.sampled_from(["id", "instruction", "workspace", "model", "limits", "timeout", "check", "x"]),
                       st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                                    lambda inner: st.lists(inner, max_size=3)
                                    | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)))
def test_any_json_object_is_a_task_or_problems(raw: dict) -> None:
    task, problems = parse_line(json.dumps(raw), 7)
    assert (task is None) == bool(problems)
    if task is not None:
        assert task.id == raw["id"] and task.instruction == raw["instruction"]
