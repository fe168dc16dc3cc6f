"""Shared fixtures of the spaces tests: a real local workspace, a real PostgreSQL cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from codeloop.environments.local import LocalExecutionEnvironment

from .postgres_cluster import PostgresUnavailableError, create_database, postgres_cluster


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run without a server files its asks in the approvals store of the state directory
    (``codeloop spaces exec``, ``run_message``): each test has its own."""
    monkeypatch.setenv("CODELOOP_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture
async def local_env(tmp_path: Path) -> AsyncIterator[LocalExecutionEnvironment]:
    env = LocalExecutionEnvironment(tmp_path / "ws", env_policy="core-only")
    (tmp_path / "ws").mkdir()
    await env.initialize()
    yield env
    await env.cleanup()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throw-away PostgreSQL cluster on a free loopback port (trust auth), for the session."""
    try:
        cluster = postgres_cluster()
        url = cluster.__enter__()
    except PostgresUnavailableError as exc:
        pytest.skip(str(exc))
    try:
        yield url
    finally:
        cluster.__exit__(None, None, None)


@pytest.fixture
def fresh_postgres(postgres_url: str) -> str:
    """A new, empty database in the session's cluster."""
    return create_database(postgres_url)
