"""A throw-away PostgreSQL cluster on a free loopback port (test and benchmark helper)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class PostgresUnavailableError(RuntimeError):
    """The server binaries, or a user to own the cluster as root, are missing (the reason)."""


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """Start a cluster (trust auth) and yield its ``postgresql://`` URL; stopped and removed after.

    As root, PostgreSQL refuses to run, so the cluster is owned by and run as the ``postgres``
    (or ``nobody``) system user via ``runuser``."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        raise PostgresUnavailableError("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    prefix: list[str] = []
    user = None
    if os.geteuid() == 0:
        user = next((u for u in ("postgres", "nobody") if _user_exists(u)), None)
        if user is None or not shutil.which("runuser"):
            raise PostgresUnavailableError(
                "running as root without a 'postgres'/'nobody' user and runuser to own the cluster")
        prefix = ["runuser", "-u", user, "--"]
    base = Path(tempfile.mkdtemp(prefix="codeloop-pg-"))
    if user:
        shutil.chown(base, user)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = base / "data"
    try:
        subprocess.run([*prefix, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"], check=True,
                       capture_output=True, timeout=120)
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-l", str(base / "log"), "-w", "-o",
                        f"-p {port} -k {base} -h 127.0.0.1 -F -c max_connections=200", "start"],
                       check=True, capture_output=True, timeout=120)
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


def create_database(cluster_url: str) -> str:
    """A new, empty database in the cluster at ``cluster_url``; its URL."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(cluster_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return cluster_url.rsplit("/", 1)[0] + "/" + name
