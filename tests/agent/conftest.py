"""The ``harness`` fixture: a Session over a real workspace driven by the ScriptedAdapter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeloop.agent.config import SessionConfig

from .agent_harness import Harness


@pytest.fixture
def harness(tmp_path: Path) -> Callable[..., Harness]:
    def make(profile_id: str, script: list[Any], config: SessionConfig | None = None) -> Harness:
        return Harness(profile_id, tmp_path, script, config)

    return make
