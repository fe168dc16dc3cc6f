"""Shared fixtures of the spaces tests: a real local workspace, a real PostgreSQL cluster."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
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


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A throw-away PostgreSQL cluster on a free loopback port (trust auth), for the session.

    As root, PostgreSQL refuses to run, so the cluster is owned by and run as the ``postgres``
    (or ``nobody``) system user via ``runuser``."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    base = Path(tempfile.mkdtemp(prefix="codeloop-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        user = next((u for u in ("postgres", "nobody") if _user_exists(u)), None)
        if user is None or not shutil.which("runuser"):
            pytest.skip("running as root without a 'postgres'/'nobody' user and runuser to own the cluster")
        shutil.chown(base, user)
        prefix = ["runuser", "-u", user, "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = base / "data"
    subprocess.run([*prefix, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"], check=True,
                   capture_output=True, timeout=120)
    subprocess.run([*prefix, pg_ctl, "-D", str(data), "-l", str(base / "log"), "-w", "-o",
                    f"-p {port} -k {base} -h 127.0.0.1 -F -c max_connections=200", "start"],
                   check=True, capture_output=True, timeout=120)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


def _user_exists(name: str) -> bool:
    import pwd
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@pytest.fixture
def fresh_postgres(postgres_url: str) -> str:
    """A new, empty database in the session's cluster."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_url.rsplit("/", 1)[0] + "/" + name
