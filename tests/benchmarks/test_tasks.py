"""The local-model task set is honest: each check fails on the untouched workspace and
passes after the reference solution (issue 10 "How it is measured"), and half of it is held
out from tuning (issue 20)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TASKS = Path(__file__).resolve().parents[2] / "benchmarks" / "tasks"
TASK_DIRS = sorted(p for p in TASKS.iterdir() if (p / "task.txt").exists())


def test_there_are_at_least_forty_tasks() -> None:
    assert len(TASK_DIRS) >= 40


def test_every_task_is_in_exactly_one_split_and_at_least_half_are_held_out() -> None:
    split = json.loads((TASKS / "split.json").read_text())
    assert sorted(split) == ["dev", "heldout"]
    dev, heldout = split["dev"], split["heldout"]
    names = [p.name for p in TASK_DIRS]
    assert sorted(dev + heldout) == names  # no task missing, none twice, no stale name
    assert len(heldout) >= len(names) / 2


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=[p.name for p in TASK_DIRS])
def test_check_fails_before_and_passes_after_the_reference_solution(task_dir: Path, tmp_path: Path) -> None:
    work = tmp_path / "ws"
    shutil.copytree(task_dir / "setup", work)
    check = ["bash", str(task_dir / "check.sh")]
    before = sorted(task_dir.rglob("*"))
    assert subprocess.run(check, cwd=work, capture_output=True).returncode != 0, "check passes unsolved"
    subprocess.run(["bash", str(task_dir / "solution.sh")], cwd=work, check=True, capture_output=True)
    assert subprocess.run(check, cwd=work, capture_output=True).returncode == 0, "reference solution fails"
    assert (task_dir / "task.txt").read_text().strip()
    assert sorted(task_dir.rglob("*")) == before, "the check wrote into its task folder"
    assert not list((task_dir / "setup").rglob("hidden")), "what the check hides must not be in setup/"


def _runner():  # benchmarks/ is not a package: load the script as a module
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_tasks", TASKS.parent / "run_tasks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_tasks"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_runner_scores_an_agent_command_in_the_same_workspace_path_every_run(tmp_path: Path) -> None:
    run_tasks = _runner()
    run_tasks.WORK_ROOT = tmp_path / "work"
    task_dir = TASKS / "01_create_script"
    log = tmp_path / "paths.txt"
    solve = f"pwd >> {log} && bash {task_dir / 'solution.sh'}"
    solved = run_tasks.run_one("ref", solve, task_dir, "http://127.0.0.1:1/v1", "m", 60)
    assert solved.solved and solved.note == ""
    idle = run_tasks.run_one("idle", f"pwd >> {log}", task_dir, "http://127.0.0.1:1/v1", "m", 60)
    assert not idle.solved
    first, second = log.read_text().split()
    assert first == second == str(tmp_path / "work" / "01_create_script")  # the path is in the agent's prompt
    stuck = run_tasks.run_one("stuck", "sleep 30", task_dir, "http://127.0.0.1:1/v1", "m", 1)
    assert not stuck.solved and stuck.note == "timed out after 1s"


def test_results_table_counts_each_agent_and_marks_each_task() -> None:
    run_tasks = _runner()
    outcomes = [run_tasks.Outcome("a", "t1", True, 10.0, ""), run_tasks.Outcome("a", "t2", False, 20.0, "x"),
                run_tasks.Outcome("b", "t1", False, 3.0, ""), run_tasks.Outcome("b", "t2", False, 5.0, "")]
    table = run_tasks.results_table(["a", "b"], ["t1", "t2"], outcomes)
    assert table.splitlines() == [
        "| agent | solved | mean time per task |", "|---|---|---|",
        "| a | 1/2 | 15.0 s |", "| b | 0/2 | 4.0 s |", "",
        "| task | a | b |", "|---|---|---|",
        "| t1 | ✔ 10 s | ✘ 3 s |", "| t2 | ✘ 20 s | ✘ 5 s |",
    ]
    assert "| a | 1/2 (50.0 %) | 15.0 s |" in run_tasks.results_table(["a", "b"], ["t1", "t2"], outcomes, percent=True)

def test_runner_split_picks_one_half_or_all() -> None:
    run_tasks = _runner()
    split = json.loads((TASKS / "split.json").read_text())
    assert [p.name for p in run_tasks.select_tasks("dev")] == sorted(split["dev"])
    assert [p.name for p in run_tasks.select_tasks("heldout")] == sorted(split["heldout"])
    assert run_tasks.select_tasks() == run_tasks.select_tasks("all") == TASK_DIRS
