"""What the spaces HTTP API does, without HTTP: spaces, runs, approvals, cancellation.

Every state change is written to the :class:`~codeloop.spaces.database.SpacesStore` as it
happens (each event, then where the run stopped), so a run paused for approval can be
resumed after a restart, or by another server sharing a PostgreSQL store.

Approvals (issue 34): the operation a run waits for is a pending call in the database's
store (:mod:`codeloop.spaces.pending_calls`). A resume with an approval is that store's one
compare-and-set (``decide``): of two resumes sent at once one wins, the other is told who
answered and when (409 ``already_decided``). An answer given through the store by anything
else (a web page, an editor) is applied by a resume with an empty body. The winner then
moves the run atomically from ``awaiting_approval`` to ``running``, and the operation runs
only after its entry's claim, so it runs exactly once. Cancelling a paused run withdraws its
pending call, with an event; a server that died while an approved operation ran leaves it
``interrupted`` (reported, never run again), and one that died after the decision but
before the run gives the run back to ``awaiting_approval``, so the next resume runs it once.

Runs of one space execute one at a time (operations share one workspace). Cancellation of
a running run takes effect before its next operation.

A run stopped by the space's limits (:mod:`codeloop.spaces.limits`) is ``limit_reached``;
:meth:`SpacesService.continue_run` goes on with it once the space's policy raises them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from pydantic import BaseModel

from codeloop.policy import Policy
from codeloop.policy.pending import AlreadyDecided, PendingCall
from codeloop.sessions.rewind import RewindRefusedError, redo_run, rewind_run, run_checkpoints
from codeloop.spaces.database import RunRecord, SpaceRecord, SpacesStore, StoreFullError
from codeloop.spaces.engine import Emit, RunOutcome, execute_run, idempotent, now_iso, operation_id
from codeloop.spaces.leases import LeaseLostError
from codeloop.spaces.limits import LIMIT_REACHED, exceeded
from codeloop.spaces.operations import Approval, ErrorCategory, ErrorEvent, event_to_json
from codeloop.spaces.policy_config import build_policy, run_limits, undo_enabled
from codeloop.spaces.runs import new_run_id, parse_message, wire_status
from codeloop.spaces.workspace import SpaceEnvironment, open_environment

T = TypeVar("T")
log = logging.getLogger(__name__)

DEFAULT_TTL_S = 24 * 3600
MAX_TTL_S = 30 * 24 * 3600


def asked_ran(asked: PendingCall | None, cut: set[str], op_id: str, op: Any) -> bool:
    """Whether the operation cut by a replica's stop must be reported interrupted rather than run
    again: it may have run partly, and it is not idempotent by type or was an approved call."""
    return op_id in cut or (asked is not None and asked.status in ("running", "ran", "interrupted")) \
        or not idempotent(op)


class ServiceError(Exception):
    """A request the service refuses; carries the HTTP status and a stable code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass
class _CachedEnv:
    policy_key: str
    policy: Policy
    space_env: SpaceEnvironment


class SpacesService:
    """Spaces and runs for authenticated owners (see the module docstring)."""

    def __init__(self, store: SpacesStore, *, sandbox: bool = True) -> None:
        self.store = store
        self.sandbox = sandbox
        self._envs: dict[str, _CachedEnv] = {}
        self._space_locks: dict[str, asyncio.Lock] = {}
        self._cancelled: set[str] = set()
        self._wakeups: dict[str, asyncio.Event] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        """Runs taken over from another replica, going on in the background."""
        self._running: dict[str, asyncio.Task[Any]] = {}
        """The task executing each run here (cancelled when its lease is lost: the operation's
        process group is killed)."""
        self._lost: set[str] = set()
        self._lease_thread = ThreadPoolExecutor(1, thread_name_prefix="spaces-leases")

    async def keep_leases(self) -> None:
        """Renew this replica's leases, stop the runs whose lease another replica took (killing
        the operation they run), pick up cancellations asked on any replica, then take over the
        runs whose replica died or stalled. Called every third of the lease length."""
        # A thread of its own: renewals must not queue behind the requests' database calls.
        lost = await asyncio.get_running_loop().run_in_executor(self._lease_thread, self.store.leases.renew)
        for run_id in lost:
            self._lost.add(run_id)
            task = self._running.get(run_id)
            if task is not None:
                task.cancel()
        held = [r for r in self._running if r not in self._lost]
        self._cancelled.update(await self._db(self.store.cancel_requested, held))
        await self.take_over_runs()

    def follow_other_replicas(self) -> None:
        """Wake this process's event streams on every event any replica commits (PostgreSQL
        ``LISTEN``; with SQLite there is no other replica)."""
        loop = asyncio.get_running_loop()

        def wake(run_id: str) -> None:
            loop.call_soon_threadsafe(self._notify, run_id)

        self.store.listen(wake)

    async def _db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except StoreFullError as exc:
            raise ServiceError(507, "insufficient_storage", str(exc)) from None

    # --- spaces
    async def space_for(self, owner: str, space_id: str) -> SpaceRecord:
        """The owner's space; another owner's space is reported as missing."""
        space = await self._db(self.store.get_space, space_id)
        if space is None or space.owner != owner:
            raise ServiceError(404, "space_not_found", f"no space {space_id!r} for this API key")
        return space

    async def create_space(self, owner: str, name: str, policy: dict[str, Any], ttl_s: int) -> SpaceRecord:
        """Create a space after checking its policy builds."""
        build_policy(policy)
        return await self._db(self.store.create_space, owner, name, policy, float(ttl_s))

    async def update_space(self, space: SpaceRecord, name: str | None, policy: dict[str, Any] | None) -> SpaceRecord:
        """Rename a space or replace its policy (takes effect for the next operation run)."""
        if policy is not None:
            build_policy(policy)
        await self._db(self.store.update_space, space.id, name=name, policy=policy)
        return await self.space_for(space.owner, space.id)

    async def extend_space(self, space: SpaceRecord, ttl_s: int) -> SpaceRecord:
        """Push the expiry ``ttl_s`` seconds further (from now if it is already near)."""
        expires = min(max(space.expires_at, time.time()) + ttl_s, time.time() + MAX_TTL_S)
        await self._db(self.store.update_space, space.id, expires_at=expires)
        return await self.space_for(space.owner, space.id)

    async def delete_space(self, space: SpaceRecord) -> None:
        """Delete a space, its runs and its workspace."""
        cached = self._envs.pop(space.id, None)
        if cached:
            await cached.space_env.env.cleanup()
        await self._db(self.store.delete_space, space.id)
        await asyncio.to_thread(shutil.rmtree, space.workspace, True)

    async def cleanup_expired(self) -> int:
        """Delete expired spaces; return how many."""
        expired = await self._db(self.store.expired_spaces)
        for space in expired:
            await self.delete_space(space)
        return len(expired)

    async def environment(self, space: SpaceRecord) -> tuple[Policy, SpaceEnvironment]:
        """The space's policy and (cached) environment."""
        key = json.dumps(space.policy, sort_keys=True)
        cached = self._envs.get(space.id)
        if cached is not None and cached.policy_key == key:
            return cached.policy, cached.space_env
        policy = build_policy(space.policy)
        if cached is not None:
            await cached.space_env.env.cleanup()
        space_env = await open_environment(space.workspace, policy, sandbox=self.sandbox)
        cached = _CachedEnv(key, space_env.policy, space_env)
        self._envs[space.id] = cached
        return policy, cached.space_env

    async def close(self) -> None:
        """Stop runs taken over in the background; release environments."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for cached in self._envs.values():
            await cached.space_env.env.cleanup()
        self._envs.clear()
        self._lease_thread.shutdown(wait=False)

    async def take_over_runs(self, run_id: str | None = None) -> int:
        """Take over the runs (all, or ``run_id``) left ``running`` by a replica that died or
        stalled past its lease, and go on with each in the background from its last completed
        operation; how many (see the module docstring)."""
        taken = await self._db(self.store.take_over_runs, run_id)
        for run, lease in taken:
            task = asyncio.create_task(self._go_on_taken(run, lease.started))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return len(taken)

    async def settle(self) -> None:
        """Wait until the runs taken over here have stopped (completed, paused, or lost again)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _go_on_taken(self, run: RunRecord, started: int | None) -> None:
        """Continue a run taken over: the operation whose start was recorded and whose end was not
        is reported interrupted (or, idempotent by type, run again); an approved operation that
        was running is never run again; one decided but never claimed waits for a resume."""
        try:
            operations = parse_message(run.message)
            op_id = operation_id(operations[run.cursor], run.cursor) if run.cursor < len(operations) else None
            asked = None if op_id is None else await self._db(self.store.pending.for_step, run.id, op_id)
            cut = {str(e.step) for e in await self._db(self.store.pending.interrupt, run.id)}
            if asked is not None and (asked.status == "approved" or (asked.status == "pending" and started is None)):
                # Decided and not yet claimed, or asked with its event stored: a resume carries it on.
                await self._db(self.store.finish_step, run.id, "awaiting_approval", run.cursor, op_id)
                self._notify(run.id)
                return
            if asked is not None and asked.status == "pending":  # cut while asking: nothing ran, ask again
                await self._db(self.store.pending.withdraw, run.id, "the server asking stopped; asked again")
            start = run.cursor
            if op_id is not None and started == run.cursor and asked_ran(asked, cut, op_id, operations[run.cursor]):
                event = ErrorEvent(timestamp=now_iso(), operationId=op_id, category="system", message=(
                    f"operation {op_id} was interrupted: the server running it stopped (it may have run partly; "
                    "it is not run again)"))
                await self._db(self.store.append_event, run.id, event_to_json(event), run.cursor + 1)
                start = run.cursor + 1
            if run.cancel_requested:
                self._cancelled.add(run.id)
            space = await self._db(self.store.get_space, run.space_id)
            if space is None:
                await self._stop(run, "error", "system", "the run's space expired while it was taken over")
                return
            await self._execute(run.id, space, run.message, start, None, run.run_time_ms)
        except Exception:
            log.exception("taking over run %s failed", run.id)

    async def _asked(self, run: RunRecord) -> PendingCall | None:
        """The pending call of the operation the run waits for (or waited for), if any."""
        if run.pending_operation is None:
            return None
        return await self._db(self.store.pending.for_step, run.id, run.pending_operation)

    async def _withdraw(self, run_id: str, cursor: int, why: str) -> list[dict[str, Any]]:
        """Take back the run's pending calls, each with an event saying so; the events."""
        events = []
        for entry in await self._db(self.store.pending.withdraw, run_id, why):
            event = event_to_json(ErrorEvent(timestamp=now_iso(), operationId=str(entry.step), category="execution",
                                             message=f"approval of operation {entry.step} withdrawn: {why}"))
            await self._db(self.store.append_event, run_id, event, cursor)
            events.append(event)
        return events

    async def _stop(self, run: RunRecord, state: str, category: ErrorCategory, message: str) -> None:
        """End a run that is not executing here with an error event saying why."""
        event = event_to_json(ErrorEvent(timestamp=now_iso(), category=category, message=message))
        await self._db(self.store.append_event, run.id, event, run.cursor)
        await self._db(self.store.finish_step, run.id, state, run.cursor, None)
        self._notify(run.id)

    # --- runs
    async def run_for(self, owner: str, run_id: str) -> RunRecord:
        """The owner's run; another owner's run is reported as missing."""
        run = await self._db(self.store.get_run, run_id)
        if run is None or run.owner != owner:
            raise ServiceError(404, "run_not_found", f"no run {run_id!r} for this API key")
        return run

    def wakeup(self, run_id: str) -> asyncio.Event:
        """An event set whenever the run emits (for SSE streams in this process)."""
        return self._wakeups.setdefault(run_id, asyncio.Event())

    def _notify(self, run_id: str) -> None:
        ev = self._wakeups.get(run_id)
        if ev is not None:
            ev.set()
            self._wakeups[run_id] = asyncio.Event()

    async def start_run(self, space: SpaceRecord, raw: Any) -> dict[str, Any]:
        """Validate and execute an operations message; return its events message."""
        parse_message(raw)  # raises MessageRejectedError before anything is stored
        run_id = new_run_id()
        await self._db(self.store.create_run, run_id, space, raw)
        return await self._execute(run_id, space, raw, 0, None, fresh=True)

    async def resume(self, owner: str, run_id: str, approval: Approval) -> dict[str, Any]:
        """Answer the operation a paused run waits for (through its pending call) and continue it."""
        run = await self.run_for(owner, run_id)
        asked = await self._db(self.store.pending.for_step, run_id, approval.operationId)
        if asked is None and run.state != "awaiting_approval":
            raise ServiceError(409, "not_awaiting_approval", f"run {run_id} is {run.state}, not awaiting approval")
        if asked is None:
            raise ServiceError(409, "wrong_operation",
                               f"run {run_id} awaits approval of {run.pending_operation!r}, "
                               f"not {approval.operationId!r}")
        if asked.status == "pending" and (run.state, run.pending_operation) != ("awaiting_approval", asked.step):
            # Asked, but the run has not paused yet (its events are still being stored): no answer yet.
            raise ServiceError(409, "not_awaiting_approval", f"run {run_id} is {run.state}, not awaiting approval")
        verdict = "approve" if approval.decision == "approved" else "deny"
        decided = await self._db(self.store.pending.decide, asked.id, verdict, f"API key {owner}",
                                 approval.reason or "")
        if isinstance(decided, AlreadyDecided):
            if decided.verdict in ("running", "ran", "interrupted"):  # what was decided: it was approved
                decided = replace(decided, verdict="approved")
            raise ServiceError(409, "already_decided", f"operation {approval.operationId} of run {run_id}: "
                               f"{decided.describe(asked.id)}")
        return await self._go_on(owner, run_id, asked)

    async def _go_on(self, owner: str, run_id: str, asked: PendingCall) -> dict[str, Any]:
        """Continue a paused run whose pending call has its answer."""
        if not await self._db(self.store.claim_run, run_id, "awaiting_approval"):
            raise ServiceError(409, "not_awaiting_approval", f"run {run_id} was resumed by another request")
        run = await self.run_for(owner, run_id)
        space = await self.space_for(owner, run.space_id)
        return await self._execute(run_id, space, run.message, run.cursor, asked.id, run.run_time_ms)

    async def continue_run(self, owner: str, run_id: str) -> dict[str, Any]:
        """Go on with a run stopped by the space's limits, once they allow another operation, or
        with a paused run whose pending call was answered through the store."""
        run = await self.run_for(owner, run_id)
        asked = await self._asked(run) if run.state == "awaiting_approval" else None
        if asked is not None and asked.status != "pending":
            return await self._go_on(owner, run_id, asked)
        if run.state != LIMIT_REACHED:
            raise ServiceError(409, "not_limit_reached", f"run {run_id} is {run.state}, not stopped by a limit "
                               "(a run awaiting approval is resumed with an approval)")
        space = await self.space_for(owner, run.space_id)
        limit = exceeded(run_limits(space.policy), run.cursor, run.run_time_ms)
        if limit is not None:
            raise ServiceError(409, "limit_not_raised", f"run {run_id} is still over the space's limits.{limit}; "
                               "raise it with PATCH /v1/spaces/{id} (policy.limits), then resume")
        if not await self._db(self.store.claim_run, run_id, LIMIT_REACHED):
            raise ServiceError(409, "not_limit_reached", f"run {run_id} was resumed by another request")
        return await self._execute(run_id, space, run.message, run.cursor, None, run.run_time_ms)

    async def cancel(self, owner: str, run_id: str) -> dict[str, Any]:
        """Cancel a paused run now, or a running one before its next operation."""
        run = await self.run_for(owner, run_id)
        claimed = run.state == "awaiting_approval" and await self._db(self.store.claim_run, run_id,
                                                                                 "awaiting_approval")
        if claimed:
            await self._withdraw(run.id, run.cursor, "the run was cancelled")
            await self._stop(run, "cancelled", "execution", "run cancelled")
        elif run.state == "running":
            self._cancelled.add(run_id)
            await self._db(self.store.request_cancel, run_id)
        return await self.run_view(owner, run_id)

    async def _execute(self, run_id: str, space: SpaceRecord, raw: Any, start: int,
                       answered: str | None, run_time_ms: float = 0.0, *, fresh: bool = False) -> dict[str, Any]:
        """Execute the run (leased here) from ``start`` under its space's lease; its events message,
        or, when another replica took the run over meanwhile, the run as stored. ``fresh``: the
        run was just created, so no call of it waits for an answer but one this execution asks."""
        emitted: list[dict[str, Any]] = []

        async def emit(event: BaseModel, cursor: int) -> None:
            data = event_to_json(event)
            await self._db(self.store.append_event, run_id, data, cursor)
            emitted.append(data)
            self._notify(run_id)

        async def started(index: int) -> None:
            await self._db(self.store.leases.record_start, run_id, index)

        current = asyncio.current_task()
        self._lost.discard(run_id)  # leased here again (a resume), whatever happened to it before
        if current is not None:
            self._running[run_id] = current
        try:
            async with self._space(space.id, run_id):
                outcome = await self._run_operations(run_id, space, raw, start, answered, run_time_ms, emit, started)
                # Nothing of an ended run waits any longer. A fresh run that did not stop to ask
                # filed no call (each ask ends the execution awaiting its answer): no round trip.
                if outcome.state != "awaiting_approval" and not (fresh and outcome.state != "error"):
                    emitted += await self._withdraw(run_id, outcome.cursor, f"the run ended ({outcome.state})")
                await self._db(self.store.finish_step, run_id, outcome.state, outcome.cursor,
                               outcome.pending_operation_id, outcome.run_time_ms)
        except (LeaseLostError, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError):
                if run_id not in self._lost or current is None:
                    raise  # the server is stopping
                current.uncancel()  # cancelled by keep_leases: the operation's process group is killed
            # Another replica took the run over while this one stalled: nothing more is recorded
            # here; the answer is the run as stored (``running`` while the other goes on with it).
            self.store.leases.forget(run_id)
            self._lost.discard(run_id)
            self._notify(run_id)
            view = await self.run_view(space.owner, run_id, take_over=False)
            return {key: view[key] for key in ("protocolVersion", "runId", "status", "events")}
        finally:
            self._running.pop(run_id, None)
        self._notify(run_id)
        return {"protocolVersion": "1.0", "runId": run_id, "status": wire_status(outcome), "events": emitted}

    @contextlib.asynccontextmanager
    async def _space(self, space_id: str, run_id: str) -> AsyncIterator[None]:
        """Hold the space (its workspace) for ``run_id``: in this process, then across replicas
        (the space's lease, :mod:`codeloop.spaces.leases`)."""
        async with self._space_locks.setdefault(space_id, asyncio.Lock()):
            if self.store.leases.dialect.single_server:
                # One server per store (SQLite, under its file lock): the lock above is the whole
                # of holding the space; the database would only be asked what it cannot differ on.
                yield
                return
            # Another replica executes a run of this space: its release is a row in the database,
            # seen by asking again (nothing in this process could be awaited instead).
            pause = 0.01
            while not await self._db(self.store.leases.acquire_space, space_id, run_id):
                await asyncio.sleep(pause)
                pause = min(pause * 2, 0.2)
            try:
                yield
            finally:
                await self._db(self.store.leases.release_space, space_id, run_id)

    async def _run_operations(self, run_id: str, space: SpaceRecord, raw: Any, start: int, answered: str | None,
                              run_time_ms: float, emit: Emit, started: Callable[[int], Awaitable[None]]) -> RunOutcome:
        try:
            policy, space_env = await self.environment(space)
            outcome = await execute_run(parse_message(raw), space_env.env, policy, emit, pending=self.store.pending,
                                        run_id=run_id, start=start, answered=answered,
                                        should_stop=lambda: run_id in self._cancelled,
                                        limits=run_limits(space.policy), run_time_ms=run_time_ms,
                                        checkpoint=run_checkpoints(f"run-{run_id}", space.workspace,
                                                                   snapshots=undo_enabled(space.policy)),
                                        started=started)
        except LeaseLostError:
            raise
        except Exception as exc:  # system failure: recorded on the run, never a 500 with a lost state
            await emit(ErrorEvent(timestamp=now_iso(), category="system", message=f"run failed: {exc}"), start)
            return RunOutcome("error", start, run_time_ms=run_time_ms)
        self._cancelled.discard(run_id)
        return outcome

    async def rewind(self, owner: str, run_id: str, *, dry_run: bool, force: bool,
                     redo: bool = False) -> dict[str, Any]:
        """Put the space's files back as they were before the run (issue 35): the changes made
        (or, ``dry_run``, that would be), what the snapshots do not cover, and what ``force``
        overwrote of changes made outside the run (409 ``rewind_refused`` without it).
        ``redo``: take back the run's last rewind instead."""
        run = await self.run_for(owner, run_id)
        if run.state == "running":
            raise ServiceError(409, "run_running", f"run {run_id} is running; rewind it once it stopped")
        space = await self.space_for(owner, run.space_id)
        async with self._space(space.id, run_id):  # no run of the space executes on any replica meanwhile
            try:
                result = await asyncio.to_thread(redo_run if redo else rewind_run, f"run-{run_id}",
                                                 space.workspace, dry_run=dry_run, force=force)
            except RewindRefusedError as exc:
                raise ServiceError(409, "redo_refused" if redo else "rewind_refused", str(exc)) from None
        body = result.to_json()
        return {"runId": run_id, "dryRun": result.dry_run, "changes": body["changes"],
                "notCovered": body["not_covered"], "overwritten": body["outside"]}

    async def run_view(self, owner: str, run_id: str, *, take_over: bool = True) -> dict[str, Any]:
        """A run with all its events: the events message plus ``state``, ``spaceId`` and
        ``pendingOperationId``. ``status`` is ``running`` while it runs (a run whose replica died
        is taken over first)."""
        run = await self.run_for(owner, run_id)
        if take_over and run.state == "running":
            await self.take_over_runs(run_id)
        events = [e for _, e in await self._db(self.store.events, run_id)]
        status = run.state if run.state in ("completed", "awaiting_approval", "running") else "error"
        return {"protocolVersion": "1.0", "runId": run.id, "spaceId": run.space_id, "status": status,
                "state": run.state, "pendingOperationId": run.pending_operation, "events": events}
