"""Helpers of the ``codeloop batch`` tests: the real command, tasks files, results and logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task_model import TaskModel

CODELOOP = str(Path(sys.executable).parent / "codeloop")
CHECK = "grep -q solved answer.txt"


def batch_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``codeloop batch`` run: no API key, state and config under ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(CODELOOP_STATE_DIR=str(tmp / "state"), CODELOOP_CONFIG_DIR=str(tmp / "userconf"), **extra)
    return env


def batch_argv(tasks: Path, model: TaskModel, *args: str) -> list[str]:
    return [CODELOOP, "batch", str(tasks), "--base-url", model.base_url, "--profile", "anthropic", *args]


def run_batch(tasks: Path, model: TaskModel, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(batch_argv(tasks, model, *args), capture_output=True, text=True, timeout=timeout,
                          env=batch_env(tasks.parent), stdin=subprocess.DEVNULL)


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return path


def simple_tasks(count: int, prefix: str = "t", **fields: Any) -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "instruction": f"task number {i}", "check": CHECK, **fields} for i in range(count)]


def result_lines(path: Path) -> list[dict[str, Any]]:
    """Every whole line of a results file (a torn last line would fail json.loads: none may be)."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def log_kinds(log: str | Path) -> list[str]:
    """The kinds of a session log's events (a line being written is not one yet)."""
    kinds = []
    for line in Path(log).read_text().splitlines():
        try:
            kinds.append(json.loads(line)["kind"])
        except ValueError:
            continue
    return kinds
