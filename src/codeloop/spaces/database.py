"""Durable state of the spaces service: API keys, spaces, runs and their events.

Two back ends share one schema and one set of statements: SQLite (stdlib, WAL journal) by
default, PostgreSQL (psycopg 3) when several server processes must share a store. The store
is synchronous; the server calls it from worker threads. A run's operations, cursor, state
and every emitted event are written as they happen, so a run paused for approval survives
a restart of the server (and a second server can resume it).

Which replica executes a run is its lease (:mod:`codeloop.spaces.leases`): every record of a
run's progress (an operation's start, each event, where it stopped) is fenced by it in the
same transaction. Several replicas need PostgreSQL; a SQLite store is served by one server.

API keys are random 256-bit secrets; only their SHA-256 is stored (a fast hash is enough for
secrets with that much entropy, there is nothing to brute-force).
"""

from __future__ import annotations

import functools
import hashlib
import json
import queue
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import platformdirs

from codeloop.spaces import leases, pending_calls
from codeloop.spaces.leases import Leases, SingleServerLock, TakenRun, hold_single_server

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS api_keys (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE, created_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS spaces (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, policy TEXT NOT NULL,
        workspace TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS spaces_owner ON spaces (owner)",
    """CREATE TABLE IF NOT EXISTS runs (
        id TEXT PRIMARY KEY, space_id TEXT NOT NULL, owner TEXT NOT NULL, message TEXT NOT NULL,
        cursor INTEGER NOT NULL, state TEXT NOT NULL, pending_operation TEXT,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
        run_time_ms DOUBLE PRECISION NOT NULL DEFAULT 0)""",
    "CREATE INDEX IF NOT EXISTS runs_space ON runs (space_id)",
    """CREATE TABLE IF NOT EXISTS run_events (
        run_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (run_id, seq))""",
    *pending_calls.SCHEMA,  # CREATE ... IF NOT EXISTS: a store made before issue 34 gains it on open
    *leases.SCHEMA,
)


@dataclass(frozen=True)
class SpaceRecord:
    """One space as stored; times are seconds since the epoch."""

    id: str
    """``sp_`` + hex."""
    owner: str
    """Id of the API key that created it (``local`` without auth)."""
    name: str
    """A label chosen by the client."""
    policy: dict[str, Any]
    """The policy configuration (preset plus overrides) as given."""
    workspace: str
    """Absolute path of the space's workspace directory."""
    created_at: float
    expires_at: float
    """When the space and its workspace are deleted."""


@dataclass(frozen=True)
class RunRecord:
    """One run as stored; times are seconds since the epoch."""

    id: str
    """``run_`` + hex."""
    space_id: str
    """The space it runs in."""
    owner: str
    """Owner of the space."""
    message: dict[str, Any]
    """The operations message as received."""
    cursor: int
    """Index of the next operation to run."""
    state: str
    """``running``, ``completed``, ``awaiting_approval``, ``error``, ``cancelled`` or
    ``limit_reached`` (stopped by the space's run limits, resumable when they are raised)."""
    pending_operation: str | None
    """The operation id awaiting approval."""
    cancel_requested: bool
    """True once a cancel was asked for."""
    created_at: float
    updated_at: float
    run_time_ms: float = 0.0
    """Wall time the run's operations took so far (for the space's ``limits.maxRunTime``)."""


class _Backend(Protocol):
    placeholder: str
    kind: str

    @contextmanager
    def cursor(self) -> Iterator[Any]: ...

    dialect: leases.SqlDialect

    def close(self) -> None: ...

    def listen(self, callback: Callable[[str], None]) -> None: ...


class StoreFullError(Exception):
    """The database's disk is full; the transaction was rolled back (the database is intact)."""


class _SQLite:
    placeholder = "?"
    kind = "sqlite"
    dialect = leases.SQLITE

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._lock = threading.Lock()

    @contextmanager
    def cursor(self) -> Iterator[Any]:
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException as exc:
                if self._conn.in_transaction:  # SQLite rolls back by itself on SQLITE_FULL
                    cur.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError) and exc.sqlite_errorcode == sqlite3.SQLITE_FULL:
                    raise StoreFullError(f"no space left on device writing the spaces database {self.path}; "
                                         "nothing of this change was stored: free some space, then send "
                                         "the request again") from exc
                raise
            finally:
                cur.close()

    def close(self) -> None:
        self._conn.close()

    def listen(self, callback: Callable[[str], None]) -> None:
        pass  # one server per SQLite store: it wakes its own streams


class _Postgres:
    placeholder = "%s"
    kind = "postgresql"
    dialect = leases.POSTGRES

    def __init__(self, dsn: str, size: int = 8) -> None:
        import psycopg

        self._connect = functools.partial(psycopg.connect, dsn, autocommit=False)
        # None stands for a connection not made yet; a returned one goes on top, so a new
        # connection is only opened when every open one is busy.
        self._pool: queue.LifoQueue[Any] = queue.LifoQueue()
        for _ in range(size - 1):
            self._pool.put(None)
        self._pool.put(self._connect())  # fail now, with the driver's message, if the DSN is wrong
        self._dsn = dsn
        self._listening = threading.Event()
        self._listener: threading.Thread | None = None

    @contextmanager
    def cursor(self) -> Iterator[Any]:
        conn = self._pool.get()
        if conn is None:
            conn = self._connect()
        try:
            with conn.cursor() as cur:
                yield cur
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            self._pool.put(conn)

    def close(self) -> None:
        self._listening.clear()
        if self._listener is not None:
            self._listener.join(timeout=5)
        while not self._pool.empty():
            conn = self._pool.get_nowait()
            if conn is not None:
                conn.close()

    def listen(self, callback: Callable[[str], None]) -> None:
        """Call ``callback`` with the run id of every event or state change any replica commits
        (``LISTEN`` on a connection of its own, in a thread)."""
        import psycopg

        conn = psycopg.connect(self._dsn, autocommit=True)
        conn.execute(f"LISTEN {leases.NOTIFY_CHANNEL}")
        self._listening.set()

        def loop() -> None:
            with conn:
                while self._listening.is_set():
                    for note in conn.notifies(timeout=0.5):
                        callback(note.payload)

        self._listener = threading.Thread(target=loop, name="spaces-listen", daemon=True)
        self._listener.start()


def hash_key(secret: str) -> str:
    """The stored form of an API key."""
    return hashlib.sha256(secret.encode()).hexdigest()


class SpacesStore:
    """Keys, spaces, runs and events over one back end; all methods are thread-safe."""

    def __init__(self, backend: _Backend, data_dir: Path, lease_s: float = leases.DEFAULT_LEASE_S) -> None:
        self._db = backend
        self.data_dir = data_dir
        """Where workspaces are created (``data_dir/workspaces/<space id>``)."""
        self.leases = Leases(backend.cursor, self._sql, backend.dialect, lease_s)
        """The runs (and spaces) this replica executes (:mod:`codeloop.spaces.leases`)."""
        with self._db.cursor() as cur:
            for statement in SCHEMA:
                cur.execute(statement)
        self._add_run_time_column()

    def _add_run_time_column(self) -> None:
        """Stores made before run limits (issue 36) lack ``runs.run_time_ms``: add it."""
        try:
            self._exec("SELECT run_time_ms FROM runs WHERE 1 = 0")
        except Exception:  # sqlite3.OperationalError or psycopg's UndefinedColumn: the column is missing
            self._exec("ALTER TABLE runs ADD COLUMN run_time_ms DOUBLE PRECISION NOT NULL DEFAULT 0")

    def hold_single_server(self) -> SingleServerLock | None:
        """For a server on SQLite: lock the store for it (``ValueError`` when another server
        already serves it). PostgreSQL serves any number of replicas: None."""
        path = getattr(self._db, "path", None)
        return hold_single_server(path) if isinstance(path, Path) else None

    @property
    def kind(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.kind

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self._db.placeholder)

    def _exec(self, statement: str, *params: Any) -> list[tuple[Any, ...]]:
        with self._db.cursor() as cur:
            cur.execute(self._sql(statement), params)
            return list(cur.fetchall()) if cur.description else []

    def execute(self, statement: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run one statement (``?`` placeholders) in its own transaction; the rows it returns."""
        return self._exec(statement, *params)

    def update(self, statement: str, *params: Any) -> int:
        """Run one UPDATE in its own transaction; how many rows it changed (a compare-and-set's
        answer)."""
        with self._db.cursor() as cur:
            cur.execute(self._sql(statement), params)
            return int(cur.rowcount)

    @functools.cached_property
    def pending(self) -> pending_calls.SpacesPendingStore:
        """The runs' calls waiting for approval (:mod:`codeloop.spaces.pending_calls`)."""
        return pending_calls.SpacesPendingStore(self)

    def close(self) -> None:
        """Close connections."""
        self._db.close()

    # --- keys
    def create_key(self, name: str) -> tuple[str, str]:
        """Create an API key; return ``(key id, secret)``. Only the hash is stored."""
        key_id = "key_" + secrets.token_hex(6)
        secret = "cls_" + secrets.token_urlsafe(32)
        self._exec("INSERT INTO api_keys (id, name, key_hash, created_at) VALUES (?, ?, ?, ?)",
                   key_id, name, hash_key(secret), time.time())
        return key_id, secret

    def key_owner(self, secret: str) -> str | None:
        """The key id of ``secret``, or ``None`` when it is not a known key."""
        rows = self._exec("SELECT id FROM api_keys WHERE key_hash = ?", hash_key(secret))
        return str(rows[0][0]) if rows else None

    # --- spaces
    def create_space(self, owner: str, name: str, policy: dict[str, Any], ttl_s: float) -> SpaceRecord:
        """Create a space with its workspace directory."""
        space_id = "sp_" + secrets.token_hex(8)
        workspace = self.data_dir / "workspaces" / space_id
        workspace.mkdir(parents=True, exist_ok=True)
        now = time.time()
        record = SpaceRecord(space_id, owner, name, policy, str(workspace), now, now + ttl_s)
        self._exec("INSERT INTO spaces (id, owner, name, policy, workspace, created_at, expires_at) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)", record.id, owner, name, json.dumps(policy), record.workspace,
                   now, record.expires_at)
        return record

    def _spaces(self, where: str, *params: Any) -> list[SpaceRecord]:
        rows = self._exec("SELECT id, owner, name, policy, workspace, created_at, expires_at FROM spaces "
                          f"WHERE {where}", *params)
        return [SpaceRecord(r[0], r[1], r[2], json.loads(r[3]), r[4], float(r[5]), float(r[6])) for r in rows]

    def get_space(self, space_id: str) -> SpaceRecord | None:
        """The space, or ``None`` (also when it has expired)."""
        return next(iter(self._spaces("id = ? AND expires_at > ?", space_id, time.time())), None)

    def list_spaces(self, owner: str) -> list[SpaceRecord]:
        """The owner's live spaces, oldest first."""
        return self._spaces("owner = ? AND expires_at > ? ORDER BY created_at", owner, time.time())

    def update_space(self, space_id: str, *, name: str | None = None, policy: dict[str, Any] | None = None,
                     expires_at: float | None = None) -> None:
        """Change a space's name, policy or expiry."""
        encoded = None if policy is None else json.dumps(policy)
        for column, value in {"name": name, "policy": encoded, "expires_at": expires_at}.items():
            if value is not None:
                self._exec(f"UPDATE spaces SET {column} = ? WHERE id = ?", value, space_id)

    def delete_space(self, space_id: str) -> None:
        """Delete a space's rows (runs and events too); the caller removes the workspace."""
        with self._db.cursor() as cur:
            cur.execute(self._sql("DELETE FROM run_events WHERE run_id IN (SELECT id FROM runs WHERE space_id = ?)"),
                        (space_id,))
            cur.execute(self._sql("DELETE FROM pending_calls WHERE session IN (SELECT id FROM runs WHERE space_id = ?)"),
                        (space_id,))
            cur.execute(self._sql("DELETE FROM runs WHERE space_id = ?"), (space_id,))
            cur.execute(self._sql("DELETE FROM spaces WHERE id = ?"), (space_id,))

    def expired_spaces(self) -> list[SpaceRecord]:
        """Spaces whose time is up."""
        return self._spaces("expires_at <= ?", time.time())

    # --- runs
    def _runs(self, where: str, *params: Any) -> list[RunRecord]:
        rows = self._exec("SELECT id, space_id, owner, message, cursor, state, pending_operation, "
                          f"cancel_requested, created_at, updated_at, run_time_ms FROM runs WHERE {where}", *params)
        return [RunRecord(r[0], r[1], r[2], json.loads(r[3]), int(r[4]), r[5], r[6], bool(r[7]), float(r[8]),
                          float(r[9]), float(r[10])) for r in rows]

    def create_run(self, run_id: str, space: SpaceRecord, message: dict[str, Any]) -> None:
        """Record a new run in state ``running``, leased to this replica until :meth:`finish_step`."""
        now = time.time()
        with self._db.cursor() as cur:
            cur.execute(self._sql("INSERT INTO runs (id, space_id, owner, message, cursor, state, pending_operation, "
                                  "cancel_requested, created_at, updated_at) "
                                  "VALUES (?, ?, ?, ?, 0, 'running', NULL, 0, ?, ?)"),
                        (run_id, space.id, space.owner, json.dumps(message), now, now))
            self.leases.acquire_run(cur, run_id, space.id)

    def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or ``None``."""
        return next(iter(self._runs("id = ?", run_id)), None)

    def list_runs(self, space_id: str) -> list[RunRecord]:
        """The space's runs, oldest first."""
        return self._runs("space_id = ? ORDER BY created_at", space_id)

    def claim_run(self, run_id: str, from_state: str) -> bool:
        """Atomically move a run from ``from_state`` to ``running`` and lease it to this replica;
        False if it was not in that state.

        This is what makes a resume execute the approved operation exactly once, even when
        two requests (or two replicas) race. The run is executed here until :meth:`finish_step`."""
        with self._db.cursor() as cur:
            cur.execute(self._sql("UPDATE runs SET state = 'running', updated_at = ? WHERE id = ? AND state = ?"),
                        (time.time(), run_id, from_state))
            if cur.rowcount != 1:
                return False
            cur.execute(self._sql("SELECT space_id FROM runs WHERE id = ?"), (run_id,))
            self.leases.acquire_run(cur, run_id, str(cur.fetchone()[0]))
        return True

    def finish_step(self, run_id: str, state: str, cursor: int, pending: str | None,
                    run_time_ms: float | None = None) -> None:
        """Record where a run stopped (and the time its operations took so far, when given), fenced
        by its lease (:class:`~codeloop.spaces.leases.LeaseLostError`); the lease is given up."""
        with self._db.cursor() as cur:
            self.leases.fence(cur, run_id)
            if run_time_ms is None:
                cur.execute(self._sql("UPDATE runs SET state = ?, cursor = ?, pending_operation = ?, updated_at = ? "
                                      "WHERE id = ?"), (state, cursor, pending, time.time(), run_id))
            else:
                cur.execute(self._sql("UPDATE runs SET state = ?, cursor = ?, pending_operation = ?, updated_at = ?, "
                                      "run_time_ms = ? WHERE id = ?"),
                            (state, cursor, pending, time.time(), run_time_ms, run_id))
            self.leases.release_run(cur, run_id)
            self._announce(cur, run_id)

    def take_over_runs(self, run_id: str | None = None) -> list[tuple[RunRecord, TakenRun]]:
        """Runs in state ``running`` (all, or ``run_id``) whose lease nobody live holds, each now
        leased to this replica with the operation whose start was recorded and end was not
        (:meth:`~codeloop.spaces.leases.Leases.take_over`); :meth:`finish_step` gives it up.

        A replica renews the lease of each run it executes, so a run taken here is one whose
        replica died or stalled past the lease (SQLite: whose server stopped)."""
        taken = []
        for candidate in self.leases.candidates(run_id):
            run = self.get_run(candidate)
            lease = None if run is None else self.leases.take_over(run.id, run.space_id)
            if run is not None and lease is not None:
                taken.append((self.get_run(run.id) or run, lease))
        return taken

    def cancel_requested(self, run_ids: list[str]) -> list[str]:
        """Those of ``run_ids`` whose cancellation was asked for (on any replica)."""
        if not run_ids:
            return []
        marks = ", ".join("?" * len(run_ids))
        return [str(r[0]) for r in self._exec(f"SELECT id FROM runs WHERE cancel_requested = 1 AND id IN ({marks})",
                                              *run_ids)]

    def request_cancel(self, run_id: str) -> None:
        """Ask a running run to stop before its next operation."""
        self._exec("UPDATE runs SET cancel_requested = 1 WHERE id = ?", run_id)

    def append_event(self, run_id: str, event: dict[str, Any], cursor: int) -> int:
        """Store the next event of a run and the run's cursor (the end of an operation: fenced by
        the run's lease); return its sequence number (1-based)."""
        with self._db.cursor() as cur:
            self.leases.fence(cur, run_id, clear_started=True)
            cur.execute(self._sql("SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = ?"), (run_id,))
            seq = int(cur.fetchone()[0]) + 1
            cur.execute(self._sql("INSERT INTO run_events (run_id, seq, event) VALUES (?, ?, ?)"),
                        (run_id, seq, json.dumps(event)))
            cur.execute(self._sql("UPDATE runs SET cursor = ?, updated_at = ? WHERE id = ?"),
                        (cursor, time.time(), run_id))
            self._announce(cur, run_id)
            return seq

    def _announce(self, cur: Any, run_id: str) -> None:
        """Tell every replica's event streams (PostgreSQL ``NOTIFY``, sent when this commits)."""
        if self.kind == "postgresql":
            cur.execute(self._sql("SELECT pg_notify(?, ?)"), (leases.NOTIFY_CHANNEL, run_id))

    def listen(self, callback: Callable[[str], None]) -> None:
        """Call ``callback`` (from another thread) with the run id of each event or state change
        committed by any replica sharing the store (PostgreSQL; SQLite: its one server's own)."""
        self._db.listen(callback)

    def events(self, run_id: str, after: int = 0) -> list[tuple[int, dict[str, Any]]]:
        """``(seq, event)`` pairs of a run after sequence number ``after``."""
        rows = self._exec("SELECT seq, event FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq", run_id, after)
        return [(int(r[0]), json.loads(r[1])) for r in rows]


def default_data_dir() -> Path:
    """Where ``codeloop spaces serve`` keeps its data when ``--data-dir`` is not given."""
    return Path(platformdirs.user_data_dir("codeloop")) / "spaces"


def open_store(database: str | None, data_dir: Path | None, *,
               lease_s: float = leases.DEFAULT_LEASE_S) -> SpacesStore:
    """Open the store: PostgreSQL for a ``postgresql://`` URL, else SQLite in ``data_dir``.
    ``lease_s``: how long this replica's leases last (:mod:`codeloop.spaces.leases`).

    Raise ``ValueError`` with a one-line reason when the database cannot be opened."""
    root = (data_dir or default_data_dir()).resolve()
    if database and database.startswith(("postgresql://", "postgres://")):
        try:
            return SpacesStore(_Postgres(database), root, lease_s)
        except Exception as exc:
            raise ValueError(f"cannot open PostgreSQL store {database.split('@')[-1]!r}: "
                             f"{str(exc).strip().splitlines()[0]}") from None
    if database and not database.startswith("sqlite:"):
        raise ValueError(f"--database {database!r} is not supported; use postgresql://... or omit it for SQLite")
    path = Path(database.removeprefix("sqlite://").removeprefix("sqlite:")) if database else root / "spaces.db"
    try:
        return SpacesStore(_SQLite(path), root, lease_s)
    except (sqlite3.Error, OSError) as exc:
        raise ValueError(f"cannot open SQLite store {str(path)!r}: {exc}") from None
