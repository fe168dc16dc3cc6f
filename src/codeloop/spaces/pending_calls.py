"""Spaces' pending calls: :class:`~codeloop.policy.pending.PendingStore` on the spaces database (issue 34).

An operation the space's policy sends for approval is a row of ``pending_calls`` in the same
database as the runs (SQLite, or PostgreSQL shared by several servers), so whatever answers
it (``POST /v1/runs/{id}/resume``, a web page or an editor reading the database) answers
through one compare-and-set, and the run's server finds the answer there. The entry's
``session`` is the run's id and its ``step`` the operation's id.

The life of an entry and every guarantee are those of :mod:`codeloop.policy.pending`: each
transition is one ``UPDATE ... WHERE id = ? AND status = ?`` whose row count says who won.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from codeloop.policy.pending import (
    DEFAULT_POLL_INTERVAL,
    FINISHED,
    AlreadyDecided,
    Decided,
    PendingCall,
    PendingCallError,
    UnknownPendingCallError,
    check_answer,
)

if TYPE_CHECKING:
    from codeloop.spaces.database import SpacesStore

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS pending_calls (
        id TEXT PRIMARY KEY, session TEXT NOT NULL, step TEXT, status TEXT NOT NULL,
        may_always INTEGER NOT NULL, created_at DOUBLE PRECISION NOT NULL, decided_by TEXT,
        decided_at DOUBLE PRECISION, decision_reason TEXT NOT NULL DEFAULT '', scope TEXT, body TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS pending_calls_session ON pending_calls (session, status)",
)
"""Created with the rest of the spaces schema (``database.SCHEMA``). ``body`` is the entry's JSON
form as added (what never changes); the columns beside it hold what an answer changes."""

_COLUMNS = "status, decided_by, decided_at, decision_reason, scope, body"


class SpacesPendingStore:
    """The pending calls of the runs of one spaces database; thread-safe like the store."""

    def __init__(self, store: SpacesStore) -> None:
        self._store = store

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> PendingCall:
        status, by, at, why, scope, body = row
        return replace(PendingCall.from_json(json.loads(body)), status=status, decided_by=by,
                       decided_at=None if at is None else float(at), decision_reason=why, scope=scope)

    def add(self, call: PendingCall) -> PendingCall:
        """Store ``call`` (status pending, whatever it says) and return it as stored."""
        call = replace(call, status="pending", decided_by=None, decided_at=None, decision_reason="", scope=None)
        self._store.execute(
            "INSERT INTO pending_calls (id, session, step, status, may_always, created_at, body) "
            "VALUES (?, ?, ?, 'pending', ?, ?, ?)", call.id, call.session,
            None if call.step is None else str(call.step), int("always" in call.grants), call.created_at,
            json.dumps(call.to_json(), ensure_ascii=False))
        return call

    def get(self, pending_id: str) -> PendingCall:
        """The entry as it stands now; :class:`UnknownPendingCallError` when there is none."""
        rows = self._store.execute(f"SELECT {_COLUMNS} FROM pending_calls WHERE id = ?", pending_id)
        if not rows:
            raise UnknownPendingCallError(pending_id)
        return self._entry(rows[0])

    def list(self, session: str | None = None, status: str | None = "pending") -> builtins.list[PendingCall]:
        """Entries, oldest first; of one run and one status when given (None: any)."""
        where, args = ["1 = 1"], []
        if session is not None:
            where.append("session = ?")
            args.append(session)
        if status is not None:
            where.append("status = ?")
            args.append(status)
        rows = self._store.execute(f"SELECT {_COLUMNS} FROM pending_calls WHERE {' AND '.join(where)} "
                                   "ORDER BY created_at, id", *args)
        return [self._entry(r) for r in rows]

    def for_step(self, session: str, step: str) -> PendingCall | None:
        """The newest entry a run raised for operation ``step`` (in any status), or None."""
        rows = self._store.execute(f"SELECT {_COLUMNS} FROM pending_calls WHERE session = ? AND step = ? "
                                   "ORDER BY created_at DESC", session, step)
        return self._entry(rows[0]) if rows else None

    def decide(self, pending_id: str, verdict: str, who: str, reason: str = "",
               scope: str = "once") -> Decided | AlreadyDecided:
        """Answer a pending call: one compare-and-set; the first answer wins (:class:`Decided`),
        every later one gets :class:`AlreadyDecided` saying who answered first and when."""
        status = check_answer(verdict, scope)
        always = " AND may_always = 1" if scope == "always" else ""
        changed = self._store.update(
            "UPDATE pending_calls SET status = ?, decided_by = ?, decided_at = ?, decision_reason = ?, scope = ? "
            f"WHERE id = ? AND status = 'pending'{always}",
            status, who, time.time(), reason, scope if status == "approved" else None, pending_id)
        entry = self.get(pending_id)
        if changed == 1:
            return Decided(entry)
        if entry.status == "pending":
            raise PendingCallError(f"pending call {pending_id} can be approved once only: nothing an "
                                   "'always' could remember")
        return AlreadyDecided(entry.decided_by, entry.decided_at, entry.status, entry)

    def claim(self, pending_id: str) -> bool:
        """approved → running: True for the one caller that may now run the call."""
        changed = self._store.update("UPDATE pending_calls SET status = 'running' WHERE id = ? AND status = 'approved'",
                                     pending_id)
        if changed != 1:
            self.get(pending_id)
        return changed == 1

    def finish(self, pending_id: str, status: str = "ran") -> None:
        """running → ``status`` (``ran`` or ``interrupted``)."""
        if status not in FINISHED:
            raise PendingCallError(f"a claimed call finishes as {' or '.join(FINISHED)}, not {status!r}")
        if self._store.update("UPDATE pending_calls SET status = ? WHERE id = ? AND status = 'running'",
                              status, pending_id) != 1:
            self.get(pending_id)

    def _move(self, session: str, old: str, new: str, why: str | None) -> builtins.list[PendingCall]:
        decided = ", decided_by = 'codeloop', decided_at = ?, decision_reason = ?" if why is not None else ""
        extra: tuple[Any, ...] = (time.time(), why) if why is not None else ()
        rows = self._store.execute(f"UPDATE pending_calls SET status = ?{decided} WHERE session = ? AND status = ? "
                                   "RETURNING id", new, *extra, session, old)
        return [self.get(r[0]) for r in rows]

    def withdraw(self, session: str, why: str) -> builtins.list[PendingCall]:
        """pending → withdrawn for every entry of run ``session`` (cancelled, stopped or ended)."""
        return self._move(session, "pending", "withdrawn", why)

    def interrupt(self, session: str) -> builtins.list[PendingCall]:
        """running → interrupted for every entry of run ``session``: its server died while the
        call ran; reported, never run again."""
        return self._move(session, "running", "interrupted", None)

    async def wait(self, pending_id: str, poll_interval: float = DEFAULT_POLL_INTERVAL) -> PendingCall:
        """The entry once it is no longer pending (the answer may come from another process)."""
        while True:
            entry = await asyncio.to_thread(self.get, pending_id)
            if entry.status != "pending":
                return entry
            await asyncio.sleep(poll_interval)
