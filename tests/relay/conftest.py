"""Fixtures for relay tests."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from relay_helpers import CODELOOP, Run, clean_env


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The approvals store lives in the state directory (``approvals.sqlite3``): each test has
    its own, and so have the ``codeloop`` processes it starts (``clean_env`` copies it)."""
    monkeypatch.setenv("CODELOOP_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture
def relay(tmp_path: Path) -> Run:
    """``relay("step", "--json")`` runs ``codeloop relay step --json --root TMP/root``."""

    def run(*args: str, env: dict[str, str] | None = None, check: bool = True, root: bool = True) -> Any:
        argv = [*CODELOOP, "relay", *args]
        if root:
            argv += ["--root", str(tmp_path / "root")]
        proc = subprocess.run(argv, capture_output=True, text=True, env=env or clean_env(), timeout=120)
        if check and proc.returncode != 0:
            raise AssertionError(f"{argv} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run
