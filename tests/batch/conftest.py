"""Fixtures of the ``codeloop batch`` tests: the loopback task model (task_model.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task_model import TaskModel


@pytest.fixture(scope="module")
def model() -> Iterator[TaskModel]:
    """The stateless loopback model, no delay."""
    with TaskModel() as served:
        yield served
