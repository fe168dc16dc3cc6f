from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own state directory (never the user's)."""
    state = tmp_path / "state"
    monkeypatch.setenv("CODELOOP_STATE_DIR", str(state))
    return state
