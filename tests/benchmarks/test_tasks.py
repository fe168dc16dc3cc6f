"""The local-model task set is honest: each check fails on the untouched workspace and
passes after the reference solution (issue 10 "How it is measured")."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

TASKS = Path(__file__).resolve().parents[2] / "benchmarks" / "tasks"
TASK_DIRS = sorted(p for p in TASKS.iterdir() if (p / "task.txt").exists())


def test_there_are_at_least_ten_tasks() -> None:
    assert len(TASK_DIRS) >= 10


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=[p.name for p in TASK_DIRS])
def test_check_fails_before_and_passes_after_the_reference_solution(task_dir: Path, tmp_path: Path) -> None:
    work = tmp_path / "ws"
    shutil.copytree(task_dir / "setup", work)
    check = ["bash", str(task_dir / "check.sh")]
    assert subprocess.run(check, cwd=work, capture_output=True).returncode != 0, "check passes unsolved"
    subprocess.run(["bash", str(task_dir / "solution.sh")], cwd=work, check=True, capture_output=True)
    assert subprocess.run(check, cwd=work, capture_output=True).returncode == 0, "reference solution fails"
    assert (task_dir / "task.txt").read_text().strip()
