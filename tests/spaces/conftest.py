"""Shared fixtures of the spaces tests: a real local workspace environment."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from codeloop.environments.local import LocalExecutionEnvironment


@pytest.fixture
async def local_env(tmp_path: Path) -> AsyncIterator[LocalExecutionEnvironment]:
    env = LocalExecutionEnvironment(tmp_path / "ws", env_policy="core-only")
    (tmp_path / "ws").mkdir()
    await env.initialize()
    yield env
    await env.cleanup()
