"""The ``dirs`` fixture: a user config directory and a workspace with ``.codeloop/``."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(user))
    ws = tmp_path / "ws"
    (ws / ".codeloop").mkdir(parents=True)
    return user / "config.toml", ws
