"""Who executes a run: leases with fencing tokens in the spaces database (issue 40).

A server process (a *replica*) executes a run only while it holds the run's **lease**, a row
of ``run_leases``: its holder (the replica's id), a **fencing token** that grows by one each
time another holder takes the run, and an expiry on the database's clock. A run's operations
run in its space's one workspace, so a replica also holds its **space's lease**
(``space_leases``, same shape) while it executes one of the space's runs: runs of one space
may arrive at any replica, and they still execute one at a time.

The holder renews its leases every third of the lease length (:meth:`Leases.renew`). Every
record of a run's progress, the start of an operation (:meth:`Leases.record_start`), each
event and where the run stopped (``SpacesStore.append_event``, ``finish_step``), re-checks
both leases in the same transaction that writes it (:meth:`Leases.fence`: the rows are
locked, holder and token compared, the expiry pushed on) and raises :class:`LeaseLostError`
when another replica has taken over. So a replica that paused past its lease (SIGSTOP, a
long GC, a frozen VM) records and starts nothing after the takeover; what fencing cannot
stop is an operation that was already running when it paused (docs/scale.md).

A lease whose expiry passed is taken (:meth:`Leases.take_over`) under the same row locks, so
of a renewal and a takeover exactly one wins. The takeover also returns the operation whose
start was recorded and whose end was not (``op_started``): the caller reports it
interrupted, or runs it again when it is idempotent by type.

PostgreSQL's row locks (``SELECT ... FOR UPDATE``) and clock (``clock_timestamp()``) do all of
it; nothing here is consensus of our own. SQLite serves one server per store (``serve`` holds
an exclusive lock on the file, :func:`hold_single_server`): there, every lease held by another
holder is a dead server's, taken at once.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS run_leases (
        run_id TEXT PRIMARY KEY, space_id TEXT NOT NULL, holder TEXT NOT NULL, token BIGINT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL, op_started INTEGER)""",
    """CREATE TABLE IF NOT EXISTS space_leases (
        space_id TEXT PRIMARY KEY, holder TEXT NOT NULL, token BIGINT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL)""",
)
"""Created with the rest of the spaces schema; a store made before issue 40 gains them on open."""

DEFAULT_LEASE_S = 10.0
"""How long a lease lasts unless renewed: a stalled replica's runs are taken over after this."""

NOTIFY_CHANNEL = "codeloop_spaces_events"
"""The PostgreSQL channel a run's id is sent on with each event and state change."""


class LeaseLostError(Exception):
    """Another replica took over the run (or its space) since this one last renewed its lease."""


def new_replica_id() -> str:
    """This process's holder name: host, pid and a random part (a restarted pid is another holder)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


@dataclass(frozen=True)
class SqlDialect:
    """What differs between the back ends in the lease statements."""

    clock: str
    """The database's clock in seconds since the epoch (one clock for every replica)."""
    for_update: str
    """Row lock suffix of a SELECT (SQLite's ``BEGIN IMMEDIATE`` already serializes writers)."""
    single_server: bool
    """True for SQLite: one server per store, so another holder's lease is a dead server's."""


POSTGRES = SqlDialect("EXTRACT(EPOCH FROM clock_timestamp())::double precision", " FOR UPDATE", False)
SQLITE = SqlDialect("((julianday('now') - 2440587.5) * 86400.0)", "", True)


@dataclass(frozen=True)
class TakenRun:
    """A run taken over from a holder whose lease expired."""

    run_id: str
    token: int
    started: int | None
    """Index of the operation whose start was recorded and whose end was not, if any."""


@dataclass
class _Held:
    runs: dict[str, int] = field(default_factory=dict)
    """Run id -> fencing token, for the runs this process holds."""
    spaces: dict[str, int] = field(default_factory=dict)
    """Space id -> fencing token, for the spaces whose runs this process executes."""
    space_of: dict[str, str] = field(default_factory=dict)
    """Run id -> space id, while the run executes under its space's lease."""


class Leases:
    """The leases of one replica over one store's back end; thread-safe.

    ``cursor`` opens one transaction (the store's back end); ``sql`` turns ``?`` into the
    back end's placeholder."""

    def __init__(self, cursor: Any, sql: Any, dialect: SqlDialect, lease_s: float = DEFAULT_LEASE_S) -> None:
        self._cursor = cursor
        self._sql = sql
        self.dialect = dialect
        self.lease_s = lease_s
        self.holder = new_replica_id()
        self._held = _Held()
        self._lock = threading.Lock()

    # --- inside a transaction of the caller
    def _row(self, cur: Any, table: str, key: str, value: str) -> tuple[str, int, bool] | None:
        cur.execute(self._sql(f"SELECT holder, token, expires_at <= {self.dialect.clock} FROM {table} "
                              f"WHERE {key} = ?{self.dialect.for_update}"), (value,))
        row = cur.fetchone()
        return None if row is None else (str(row[0]), int(row[1]), bool(row[2]))

    def _free(self, row: tuple[str, int, bool] | None) -> bool:
        """A lease nobody live holds: none, expired, or (SQLite) another holder's."""
        return row is None or row[2] or (self.dialect.single_server and row[0] != self.holder)

    def fence(self, cur: Any, run_id: str, *, started: int | None = None, clear_started: bool = False) -> None:
        """Check, in the caller's transaction, that this replica still holds the run's lease (and
        its space's, while executing it), and push both expiries on; :class:`LeaseLostError` if not.

        ``started`` records that operation's start; ``clear_started`` its end."""
        with self._lock:
            token = self._held.runs.get(run_id)
            space = self._held.space_of.get(run_id)
            space_token = self._held.spaces.get(space) if space is not None else None
        if token is None:
            raise LeaseLostError(f"run {run_id} is not executed by this server")
        if self.dialect.single_server:
            # The only server of the store (its file lock) holds what it holds: no row could say
            # otherwise and no expiry is read, so only the operation's start or end is written.
            if started is not None or clear_started:
                cur.execute(self._sql("UPDATE run_leases SET op_started = ? WHERE run_id = ?"),
                            (started, run_id))
            return
        if space is not None:
            row = self._row(cur, "space_leases", "space_id", space)
            if row is None or row[:2] != (self.holder, space_token):
                raise LeaseLostError(f"the lease of space {space} was taken over by another server")
            cur.execute(self._sql(f"UPDATE space_leases SET expires_at = {self.dialect.clock} + ? "
                                  "WHERE space_id = ?"), (self.lease_s, space))
        row = self._row(cur, "run_leases", "run_id", run_id)
        if row is None or row[:2] != (self.holder, token):
            raise LeaseLostError(f"the lease of run {run_id} was taken over by another server")
        op = ", op_started = ?" if started is not None else ", op_started = NULL" if clear_started else ""
        args: tuple[Any, ...] = (self.lease_s, started, run_id) if started is not None else (self.lease_s, run_id)
        cur.execute(self._sql(f"UPDATE run_leases SET expires_at = {self.dialect.clock} + ?{op} WHERE run_id = ?"),
                    args)

    def acquire_run(self, cur: Any, run_id: str, space_id: str) -> int:
        """Take the lease of a run this replica starts executing (new, resumed from a stopped
        state, or taken over); its token. ``op_started`` stays as it is: until the new holder
        records that operation's end (its interrupted event), a takeover of the taker sees it too."""
        row = self._row(cur, "run_leases", "run_id", run_id)
        if row is None:
            cur.execute(self._sql("INSERT INTO run_leases (run_id, space_id, holder, token, expires_at, op_started) "
                                  f"VALUES (?, ?, ?, 1, {self.dialect.clock} + ?, NULL)"),
                        (run_id, space_id, self.holder, self.lease_s))
            token = 1
        else:
            token = row[1] + 1
            cur.execute(self._sql(f"UPDATE run_leases SET holder = ?, token = ?, expires_at = {self.dialect.clock} + ? "
                                  "WHERE run_id = ?"), (self.holder, token, self.lease_s, run_id))
        with self._lock:
            self._held.runs[run_id] = token
        return token

    def release_run(self, cur: Any, run_id: str) -> None:
        """Give the run's lease up (its state just left ``running`` in this transaction)."""
        with self._lock:
            token = self._held.runs.pop(run_id, None)
        if token is not None:
            cur.execute(self._sql("UPDATE run_leases SET expires_at = 0, op_started = NULL "
                                  "WHERE run_id = ? AND holder = ? AND token = ?"), (run_id, self.holder, token))

    # --- transactions of their own
    def holds(self, run_id: str) -> bool:
        """True while this replica holds the run's lease (as far as it knows)."""
        with self._lock:
            return run_id in self._held.runs

    def forget(self, run_id: str) -> None:
        """Drop a run whose lease was lost from what this replica holds."""
        with self._lock:
            self._held.runs.pop(run_id, None)
            self._held.space_of.pop(run_id, None)

    def record_start(self, run_id: str, index: int) -> None:
        """Record that operation ``index`` of the run starts, fenced (:class:`LeaseLostError`)."""
        with self._cursor() as cur:
            self.fence(cur, run_id, started=index)

    def acquire_space(self, space_id: str, run_id: str) -> bool:
        """Take the space's lease for executing ``run_id`` when no live holder has it; False if one has."""
        with self._cursor() as cur:
            row = self._row(cur, "space_leases", "space_id", space_id)
            if not self._free(row) and (row is None or row[0] != self.holder):
                return False
            if row is None:
                cur.execute(self._sql("INSERT INTO space_leases (space_id, holder, token, expires_at) "
                                      f"VALUES (?, ?, 1, {self.dialect.clock} + ?)"),
                            (space_id, self.holder, self.lease_s))
                token = 1
            else:
                token = row[1] + 1
                cur.execute(self._sql(f"UPDATE space_leases SET holder = ?, token = ?, expires_at = {self.dialect.clock}"
                                      " + ? WHERE space_id = ?"), (self.holder, token, self.lease_s, space_id))
        with self._lock:
            self._held.spaces[space_id] = token
            self._held.space_of[run_id] = space_id
        return True

    def release_space(self, space_id: str, run_id: str) -> None:
        """Give the space's lease up (when another replica has not taken it meanwhile)."""
        with self._lock:
            token = self._held.spaces.pop(space_id, None)
            self._held.space_of.pop(run_id, None)
        if token is not None:
            with self._cursor() as cur:
                cur.execute(self._sql("UPDATE space_leases SET expires_at = 0 WHERE space_id = ? AND holder = ? "
                                      "AND token = ?"), (space_id, self.holder, token))

    def renew(self) -> list[str]:
        """Push on every lease this replica holds; the runs whose lease (or space's) was taken over."""
        with self._lock:
            runs = dict(self._held.runs)
            spaces = dict(self._held.spaces)
            space_of = dict(self._held.space_of)
        lost_spaces: set[str] = set()
        lost: list[str] = []
        with self._cursor() as cur:
            for space_id, token in spaces.items():
                cur.execute(self._sql(f"UPDATE space_leases SET expires_at = {self.dialect.clock} + ? "
                                      "WHERE space_id = ? AND holder = ? AND token = ?"),
                            (self.lease_s, space_id, self.holder, token))
                if cur.rowcount != 1:
                    lost_spaces.add(space_id)
            for run_id, token in runs.items():
                cur.execute(self._sql(f"UPDATE run_leases SET expires_at = {self.dialect.clock} + ? "
                                      "WHERE run_id = ? AND holder = ? AND token = ?"),
                            (self.lease_s, run_id, self.holder, token))
                if cur.rowcount != 1 or space_of.get(run_id) in lost_spaces:
                    lost.append(run_id)
        for run_id in lost:  # every later record of it is refused, whatever still runs here
            self.forget(run_id)
        with self._lock:
            for space_id in lost_spaces:
                self._held.spaces.pop(space_id, None)
        return lost

    def candidates(self, run_id: str | None) -> list[str]:
        """Runs in state ``running`` whose lease nobody live holds (all, or ``run_id``)."""
        one = " AND r.id = ?" if run_id is not None else ""
        with self._cursor() as cur:
            cur.execute(self._sql(
                "SELECT r.id FROM runs r LEFT JOIN run_leases l ON l.run_id = r.id WHERE r.state = 'running' "
                f"AND (l.run_id IS NULL OR l.expires_at <= {self.dialect.clock} OR (? = 1 AND l.holder <> ?)){one}"),
                (int(self.dialect.single_server), self.holder, *([run_id] if run_id is not None else [])))
            found = [str(r[0]) for r in cur.fetchall()]
        return [r for r in found if not self.holds(r)]

    def take_over(self, run_id: str, space_id: str) -> TakenRun | None:
        """Take the run's lease when it is still ``running`` and nobody live holds it (checked under
        the row lock, so of a renewal and a takeover one wins); None otherwise."""
        with self._cursor() as cur:
            row = self._row(cur, "run_leases", "run_id", run_id)
            if not self._free(row) or self.holds(run_id):
                return None
            cur.execute(self._sql("SELECT state FROM runs WHERE id = ?"), (run_id,))
            state = cur.fetchone()
            if state is None or state[0] != "running":
                return None
            started = None
            if row is not None:
                cur.execute(self._sql("SELECT op_started FROM run_leases WHERE run_id = ?"), (run_id,))
                value = cur.fetchone()[0]
                started = None if value is None else int(value)
            token = self.acquire_run(cur, run_id, space_id)
        return TakenRun(run_id, token, started)


class SingleServerLock:
    """An exclusive lock on a SQLite store held by the one server that serves it."""

    def __init__(self, handle: IO[str]) -> None:
        self._handle = handle

    def release(self) -> None:
        self._handle.close()


def hold_single_server(database: Path) -> SingleServerLock:
    """Lock ``database`` for this server; ``ValueError`` when another server already serves it
    (SQLite is one server per store; several replicas need PostgreSQL)."""
    path = database.with_name(database.name + ".serve.lock")
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        who = handle.read().strip() or "another process"
        handle.close()
        raise ValueError(f"the SQLite store {str(database)!r} is already served by {who}; SQLite serves one "
                         "server per store: stop it, or use --database postgresql://... for several replicas") from None
    handle.truncate(0)
    handle.write(f"codeloop spaces serve (pid {os.getpid()})\n")
    handle.flush()
    return SingleServerLock(handle)
