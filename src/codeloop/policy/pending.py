"""Calls waiting for a human's answer: one durable store, decided exactly once (issue 34).

A policy that asks (``Decision.ask``) never prompts: the pipeline adds a :class:`PendingCall` to
a :class:`PendingStore`, and whoever answers (the terminal prompt of ``codeloop run``,
``codeloop approvals approve``, ``codeloop relay approve``, spaces' ``/resume``, a web page, an
editor) answers through the store. The store is the only record of what waits and of what
was decided; no face keeps a list or a flag of its own.

Life of an entry (``status``)::

    pending ──decide(approve)──▶ approved ──claim──▶ running ──finish──▶ ran
       │  └──decide(deny)─────▶ denied                  └──(crash; owner restarts)──▶ interrupted
       └──withdraw(session)──▶ withdrawn

Every arrow is one compare-and-set (``UPDATE ... WHERE id=? AND status=?``; the row count says
who won), so two answers given at once, from two processes, make one ``Decided`` and one
``AlreadyDecided``, and two owners resuming at once run the call once: only the one whose
``claim`` succeeded runs it.

The crash promise: an approved call nobody claimed yet runs once when its owner resumes; a
call found ``running`` on restart (claimed, never finished) may or may not have run, so it
is marked ``interrupted`` (:meth:`PendingStore.interrupt`) and reported, never run again.

:class:`SqlitePendingStore` is the store of ``codeloop run`` and the relay (one SQLite file in
codeloop's state directory, ``approvals.sqlite3``); spaces keeps the same Protocol on its own
database. Each operation opens its own connection, so the store is safe across threads and
processes (WAL, a busy timeout).
"""

from __future__ import annotations

import asyncio
import builtins
import json
import math
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

from codeloop.policy.approval import Effect, ToolCallRequest
from codeloop.policy.model import Decision

Face = Literal["run", "relay", "spaces", "tool", "codali"]
"""Which face raised the ask."""
Status = Literal["pending", "approved", "denied", "withdrawn", "running", "ran", "interrupted"]
"""Where an entry is in its life (module docstring)."""
Verdict = Literal["approve", "deny"]
Scope = Literal["once", "always"]

FACES: tuple[str, ...] = get_args(Face)
STATUSES: tuple[str, ...] = get_args(Status)
SCOPES: tuple[str, ...] = get_args(Scope)
FINISHED: tuple[str, ...] = ("ran", "interrupted")
"""Statuses ``finish`` may set."""

_EFFECTS = frozenset(str(e) for e in Effect)

DEFAULT_POLL_INTERVAL = 0.2
"""Seconds between two reads of an entry by :meth:`PendingStore.wait`."""


class UnknownPendingCallError(KeyError):
    """No pending call has this id; the message says so in one line (a CLI prints it)."""

    def __init__(self, pending_id: str) -> None:
        super().__init__(pending_id)
        self.pending_id = pending_id

    def __str__(self) -> str:
        return (f"no pending call {self.pending_id!r} (list them with 'codeloop approvals list "
                "--all')")


class PendingCallError(ValueError):
    """A pending call's JSON form or an answer is malformed; the message names the field."""


@dataclass(frozen=True)
class PendingCall:
    """One call held for a human's answer, as every answering surface reads it."""

    id: str
    """Unique id (uuid4 hex): what ``approve``/``deny`` name."""
    session: str
    """The run's session id, the relay session's id or the spaces run's id."""
    face: str
    """Which face raised it (:data:`Face`)."""
    step: int | str | None
    """The face's unit of work (the agent's turn, a relay reply, a spaces operation)."""
    tool: str
    """The tool called."""
    arguments: dict[str, Any]
    """Its validated arguments, exactly as they will run."""
    command: str | None
    """The shell line it runs, when it runs one."""
    paths: tuple[str, ...] | None
    """The workspace paths it names; None when its tool cannot say (it may touch any file)."""
    effects: tuple[str, ...]
    """What it may do (``read``, ``write``, ``exec``, ``network``), sorted."""
    reason: str
    """Why it asks: what the human is shown."""
    rule: str | None
    """The policy rule that asked, when one did."""
    grants: tuple[str, ...]
    """What an answer may grant: ``("once",)`` or ``("once", "always")``."""
    remember_as: tuple[str, ...]
    """What an "always" answer stores (command prefixes, a tool's name)."""
    created_at: float
    """When it was raised (seconds since the epoch)."""
    call_id: str | None = None
    """The provider's id of the call, if any."""
    status: str = "pending"
    """:data:`Status`."""
    decided_by: str | None = None
    """Who answered (``terminal``, ``alice@host``, ``codeloop`` for a withdrawal)."""
    decided_at: float | None = None
    """When it was answered."""
    decision_reason: str = ""
    """Why, as the one who answered (or withdrew it) said."""
    scope: str | None = None
    """``once`` or ``always`` for an approval; None otherwise."""

    @staticmethod
    def raise_for(call: ToolCallRequest, decision: Decision, *, session: str, face: str,
                  step: int | str | None = None, remember_as: tuple[str, ...] = ()) -> PendingCall:
        """A new pending entry for ``call``, which ``decision`` (an ask) held; "always" may
        be granted when there is something to remember."""
        return PendingCall(
            id=uuid.uuid4().hex, session=session, face=face, step=step, tool=call.name,
            arguments=dict(call.arguments), command=call.command, paths=call.paths,
            effects=tuple(sorted(str(e) for e in call.effects)), reason=decision.reason, rule=decision.rule,
            grants=("once", "always") if remember_as else ("once",), remember_as=tuple(remember_as),
            created_at=time.time(), call_id=call.call_id)

    @property
    def decision(self) -> Decision:
        """The ``ask`` that held it."""
        return Decision.ask(self.reason, self.rule, self.remember_as)

    @property
    def request(self) -> ToolCallRequest:
        """The call as a policy saw it (arguments as stored, effects and paths as declared)."""
        return ToolCallRequest(self.tool, dict(self.arguments), self.call_id,
                               frozenset(Effect(e) for e in self.effects if e in _EFFECTS), self.paths, self.command)

    def summary(self, limit: int = 300) -> str:
        """One line of what runs: the command line, or the tool and its arguments."""
        if self.command is not None:
            return self.command[:limit]
        return f"{self.tool} {json.dumps(self.arguments, ensure_ascii=False)[:limit]}"

    def to_json(self) -> dict[str, Any]:
        """The JSON form (:meth:`from_json` reads it back); what ``--json`` prints."""
        data = asdict(self)
        for key in ("paths", "effects", "grants", "remember_as"):
            if data[key] is not None:
                data[key] = list(data[key])
        return data

    @staticmethod
    def from_json(data: Any) -> PendingCall:
        """The entry :meth:`to_json` wrote; :class:`PendingCallError` naming the field when malformed."""
        if not isinstance(data, dict):
            raise PendingCallError(f"a pending call must be a JSON object, not {type(data).__name__}")
        out: dict[str, Any] = {}
        for key, kinds in _FIELDS.items():
            value = data.get(key)
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
                raise PendingCallError(f"pending call: field {key!r} is missing or has the wrong type")
            out[key] = value
        for key in ("paths", "effects", "grants", "remember_as"):
            value = out[key]
            if value is not None:
                if not all(isinstance(v, str) for v in value):
                    raise PendingCallError(f"pending call: field {key!r} must be a list of strings")
                out[key] = tuple(value)
        for key in ("created_at", "decided_at"):
            if out[key] is not None:
                try:
                    out[key] = float(out[key])
                except OverflowError:
                    out[key] = math.inf
                if not math.isfinite(out[key]):
                    raise PendingCallError(f"pending call: field {key!r} must be a finite number")
        for key, allowed in (("face", FACES), ("status", STATUSES)):
            if out[key] not in allowed:
                raise PendingCallError(f"pending call: field {key!r} must be one of {', '.join(allowed)}")
        if out["scope"] is not None and out["scope"] not in SCOPES:
            raise PendingCallError("pending call: field 'scope' must be once, always or null")
        if out["grants"] not in (("once",), ("once", "always")):
            raise PendingCallError("pending call: field 'grants' must be [\"once\"] or [\"once\", \"always\"]")
        return PendingCall(**out)


def _as_tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


_NONE = type(None)
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "id": str, "session": str, "face": str, "step": (int, str, _NONE), "tool": str, "arguments": dict,
    "command": (str, _NONE), "paths": (list, _NONE), "effects": list, "reason": str, "rule": (str, _NONE),
    "grants": list, "remember_as": list, "created_at": (int, float), "call_id": (str, _NONE), "status": str,
    "decided_by": (str, _NONE), "decided_at": (int, float, _NONE), "decision_reason": str,
    "scope": (str, _NONE),
}
"""Each field of the JSON form and the JSON types it may hold (a bool is no number here)."""


@dataclass(frozen=True)
class Decided:
    """``decide`` won: this answer is the one that counts."""

    entry: PendingCall
    """The entry as decided."""


@dataclass(frozen=True)
class AlreadyDecided:
    """``decide`` lost: the call was answered (or withdrawn) before."""

    by: str | None
    """Who answered it first."""
    at: float | None
    """When."""
    verdict: str
    """Its status now (``approved``, ``denied``, ``withdrawn``, ``running``, ``ran``, ``interrupted``)."""
    entry: PendingCall | None = None
    """The entry as it stands, when the store has it at hand."""

    def describe(self, pending_id: str) -> str:
        """One line for a user: ``pending call ID was already approved by X at T``."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.at)) if self.at is not None else "?"
        answer = "approved" if self.verdict in ("running", "ran", "interrupted") else self.verdict
        now = f" (it {'is running' if self.verdict == 'running' else self.verdict})" if answer != self.verdict else ""
        return f"pending call {pending_id} was already {answer} by {self.by or '?'} at {when}{now}"


class PendingStore(Protocol):
    """The one store of calls waiting for an answer (module docstring for the life of an entry).

    Every method but :meth:`wait` is one short transaction; ``decide``, ``claim``, ``finish``
    and ``withdraw`` are compare-and-sets. An unknown id raises :class:`UnknownPendingCallError`."""

    def add(self, call: PendingCall) -> PendingCall: ...

    def get(self, pending_id: str) -> PendingCall: ...

    def list(self, session: str | None = None, status: str | None = "pending") -> builtins.list[PendingCall]: ...

    def decide(self, pending_id: str, verdict: str, who: str, reason: str = "",
               scope: str = "once") -> Decided | AlreadyDecided: ...

    def claim(self, pending_id: str) -> bool: ...

    def finish(self, pending_id: str, status: str = "ran") -> None: ...

    def withdraw(self, session: str, why: str) -> builtins.list[PendingCall]: ...

    def interrupt(self, session: str) -> builtins.list[PendingCall]: ...

    async def wait(self, pending_id: str, poll_interval: float = DEFAULT_POLL_INTERVAL) -> PendingCall: ...


def check_answer(verdict: str, scope: str) -> Status:
    """The status ``verdict`` leads to; :class:`PendingCallError` for a verdict or scope that is none."""
    if verdict not in ("approve", "deny"):
        raise PendingCallError(f"unknown verdict {verdict!r}: use approve or deny")
    if scope not in SCOPES:
        raise PendingCallError(f"unknown scope {scope!r}: use once or always")
    if verdict == "deny" and scope != "once":
        raise PendingCallError("a denial is for this call only (scope once)")
    return "approved" if verdict == "approve" else "denied"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending_calls (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    status TEXT NOT NULL,
    may_always INTEGER NOT NULL,
    created_at REAL NOT NULL,
    decided_by TEXT,
    decided_at REAL,
    decision_reason TEXT NOT NULL DEFAULT '',
    scope TEXT,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_calls_session ON pending_calls (session, status);
"""
"""``body`` is the entry's JSON form as added (what never changes); the columns beside it hold
what a decision changes, so every transition is one UPDATE of one row."""

_COLUMNS = "status, decided_by, decided_at, decision_reason, scope, body"


class SqlitePendingStore:
    """:class:`PendingStore` in one SQLite file, shared by every process of the machine."""

    BUSY_TIMEOUT_MS = 30_000
    """How long one operation waits for another process's write before failing."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._ready = False
        """The file and its table exist (made on first use: a run that never asks writes nothing)."""

    @contextmanager
    def _connect(self, create: bool = False) -> Iterator[sqlite3.Connection]:
        # One connection per operation: nothing is shared between threads or across a fork.
        where: Path | str = self.path
        if not self._ready:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            elif not os.path.exists(self.path):  # (False too when it cannot be looked at)
                where = ":memory:"  # nothing was ever asked: read (and change) an empty table, create no file
        with closing(sqlite3.connect(where, timeout=self.BUSY_TIMEOUT_MS / 1000, isolation_level=None)) as db:
            if where != self.path:
                db.executescript(_SCHEMA)
                yield db
                return
            db.execute(f"PRAGMA busy_timeout={self.BUSY_TIMEOUT_MS}")
            if not self._ready:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(_SCHEMA)
                self._ready = True
            yield db

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> PendingCall:
        status, by, at, why, scope, body = row
        return replace(PendingCall.from_json(json.loads(body)), status=status, decided_by=by, decided_at=at,
                       decision_reason=why, scope=scope)

    def add(self, call: PendingCall) -> PendingCall:
        """Store ``call`` (status pending, whatever it says) and return it as stored."""
        call = replace(call, status="pending", decided_by=None, decided_at=None, decision_reason="", scope=None)
        with self._connect(create=True) as db:
            db.execute("INSERT INTO pending_calls (id, session, status, may_always, created_at, body) "
                       "VALUES (?, ?, 'pending', ?, ?, ?)",
                       (call.id, call.session, int("always" in call.grants), call.created_at,
                        json.dumps(call.to_json(), ensure_ascii=False)))
        return call

    def get(self, pending_id: str) -> PendingCall:
        """The entry as it stands now."""
        with self._connect() as db:
            row = db.execute(f"SELECT {_COLUMNS} FROM pending_calls WHERE id = ?", (pending_id,)).fetchone()
        if row is None:
            raise UnknownPendingCallError(pending_id)
        return self._entry(row)

    def list(self, session: str | None = None, status: str | None = "pending") -> builtins.list[PendingCall]:
        """Entries, oldest first; of one session and one status when given (None: any)."""
        where, args = [], []
        if session is not None:
            where.append("session = ?")
            args.append(session)
        if status is not None:
            where.append("status = ?")
            args.append(status)
        sql = f"SELECT {_COLUMNS} FROM pending_calls"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._connect() as db:
            rows = db.execute(sql + " ORDER BY created_at, rowid", args).fetchall()
        return [self._entry(r) for r in rows]

    def decide(self, pending_id: str, verdict: str, who: str, reason: str = "",
               scope: str = "once") -> Decided | AlreadyDecided:
        """Answer a pending call: one compare-and-set. The first answer wins (:class:`Decided`);
        every later one gets :class:`AlreadyDecided` with who answered first and when.
        :class:`PendingCallError` when ``scope`` is "always" and the entry does not grant it."""
        status = check_answer(verdict, scope)
        with self._connect() as db:
            changed = db.execute(
                "UPDATE pending_calls SET status = ?, decided_by = ?, decided_at = ?, decision_reason = ?, "
                "scope = ? WHERE id = ? AND status = 'pending' AND (? = 'once' OR may_always = 1)",
                (status, who, time.time(), reason, scope if status == "approved" else None, pending_id, scope),
            ).rowcount
        entry = self.get(pending_id)
        if changed == 1:
            return Decided(entry)
        if entry.status == "pending":
            raise PendingCallError(f"pending call {pending_id} can be approved once only: nothing an "
                                   "'always' could remember")
        return AlreadyDecided(entry.decided_by, entry.decided_at, entry.status, entry)

    def claim(self, pending_id: str) -> bool:
        """approved → running: True for the one caller that may now run the call."""
        with self._connect() as db:
            changed = db.execute("UPDATE pending_calls SET status = 'running' WHERE id = ? AND status = 'approved'",
                                 (pending_id,)).rowcount
        if changed != 1:
            self.get(pending_id)  # an unknown id says so
        return changed == 1

    def finish(self, pending_id: str, status: str = "ran") -> None:
        """running → ``status`` (``ran``, or ``interrupted``); an entry not running is left as it is."""
        if status not in FINISHED:
            raise PendingCallError(f"a claimed call finishes as {' or '.join(FINISHED)}, not {status!r}")
        with self._connect() as db:
            changed = db.execute("UPDATE pending_calls SET status = ? WHERE id = ? AND status = 'running'",
                                 (status, pending_id)).rowcount
        if changed != 1:
            self.get(pending_id)

    def _move(self, session: str, old: str, new: str, why: str | None) -> builtins.list[PendingCall]:
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")  # the ids read are the rows changed: no answer slips between
            ids = [r[0] for r in db.execute("SELECT id FROM pending_calls WHERE session = ? AND status = ?",
                                            (session, old))]
            if why is None:
                db.execute("UPDATE pending_calls SET status = ? WHERE session = ? AND status = ?", (new, session, old))
            else:
                db.execute("UPDATE pending_calls SET status = ?, decided_by = 'codeloop', decided_at = ?, "
                           "decision_reason = ? WHERE session = ? AND status = ?",
                           (new, time.time(), why, session, old))
            db.execute("COMMIT")
        return [self.get(i) for i in ids]

    def withdraw(self, session: str, why: str) -> builtins.list[PendingCall]:
        """pending → withdrawn for every entry of ``session`` (it was cancelled, timed out or
        ended); returns them, for the session's events."""
        return self._move(session, "pending", "withdrawn", why)

    def interrupt(self, session: str) -> builtins.list[PendingCall]:
        """running → interrupted for every entry of ``session``: called by its owner on restart,
        when nothing of it can still be running. They are reported, never run again."""
        return self._move(session, "running", "interrupted", None)

    async def wait(self, pending_id: str, poll_interval: float = DEFAULT_POLL_INTERVAL) -> PendingCall:
        """The entry once it is no longer pending (polls: the answer may come from another process)."""
        while True:
            entry = await asyncio.to_thread(self.get, pending_id)
            if entry.status != "pending":
                return entry
            await asyncio.sleep(poll_interval)
