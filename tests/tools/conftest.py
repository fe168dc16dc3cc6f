"""Fixtures: a real ``LocalExecutionEnvironment`` on a temporary workspace."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from codeloop.environments.local import LocalExecutionEnvironment

from .workspace_fixture import Workspace


@pytest.fixture
async def ws(tmp_path: Path) -> AsyncIterator[Workspace]:
    root = tmp_path / "ws"
    root.mkdir()
    env = LocalExecutionEnvironment(root)
    await env.initialize()
    try:
        yield Workspace(root, env)
    finally:
        await env.cleanup()
