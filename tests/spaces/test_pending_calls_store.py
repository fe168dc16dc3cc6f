"""``SpacesPendingStore``: the pending-call store's contract on the spaces database, SQLite and
PostgreSQL (the same transitions as ``policy/pending.py``'s store, issue 34)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.policy.approval import Effect, ToolCallRequest
from codeloop.policy.model import Decision
from codeloop.policy.pending import (
    AlreadyDecided,
    Decided,
    PendingCall,
    PendingCallError,
    UnknownPendingCallError,
)
from codeloop.spaces.database import SpacesStore, open_store
from codeloop.spaces.pending_calls import SpacesPendingStore

SHELL = ToolCallRequest("shell", {"command": "rm -rf build"}, None, frozenset({Effect.EXEC, Effect.READ}), None,
                        "rm -rf build")


@pytest.fixture(params=["sqlite", "postgresql"])
def spaces(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SpacesStore]:
    database = request.getfixturevalue("fresh_postgres") if request.param == "postgresql" else None
    store = open_store(database, tmp_path)
    yield store
    store.close()


def raise_one(pending: SpacesPendingStore, run: str = "run_1", step: str = "op-1") -> PendingCall:
    return pending.add(PendingCall.raise_for(SHELL, Decision.ask("destructive", "approvalRequiredCommands"),
                                             session=run, face="spaces", step=step))


def test_an_entry_round_trips_and_is_found_by_its_operation(spaces: SpacesStore) -> None:
    entry = raise_one(spaces.pending)
    got = spaces.pending.get(entry.id)
    assert got == entry and got.command == "rm -rf build" and got.effects == ("exec", "read")
    assert spaces.pending.for_step("run_1", "op-1") == entry and spaces.pending.for_step("run_1", "op-2") is None
    assert [e.id for e in spaces.pending.list(session="run_1")] == [entry.id]
    with pytest.raises(UnknownPendingCallError, match="no pending call 'nope'"):
        spaces.pending.get("nope")


def test_answers_from_many_threads_make_one_decision_and_one_claim(spaces: SpacesStore) -> None:
    entry = raise_one(spaces.pending)
    gate = threading.Barrier(6)
    results: list[object] = []

    def answer(who: str) -> None:
        gate.wait()
        results.append(spaces.pending.decide(entry.id, "approve", who, "ok"))

    threads = [threading.Thread(target=answer, args=(f"user{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    decided = [r for r in results if isinstance(r, Decided)]
    assert len(decided) == 1 and sum(isinstance(r, AlreadyDecided) for r in results) == 5
    late = spaces.pending.decide(entry.id, "deny", "bob")
    assert isinstance(late, AlreadyDecided) and late.by == decided[0].entry.decided_by
    assert [spaces.pending.claim(entry.id), spaces.pending.claim(entry.id)] == [True, False]
    spaces.pending.finish(entry.id)
    assert spaces.pending.get(entry.id).status == "ran"
    with pytest.raises(PendingCallError):
        spaces.pending.finish(entry.id, "approved")


def test_withdraw_and_interrupt_move_only_that_runs_entries(spaces: SpacesStore) -> None:
    waiting, running, other = raise_one(spaces.pending), raise_one(spaces.pending), raise_one(spaces.pending, "run_2")
    spaces.pending.decide(running.id, "approve", "alice")
    spaces.pending.claim(running.id)
    [withdrawn] = spaces.pending.withdraw("run_1", "the run was cancelled")
    assert (withdrawn.id, withdrawn.status, withdrawn.decided_by) == (waiting.id, "withdrawn", "codeloop")
    assert [e.id for e in spaces.pending.interrupt("run_1")] == [running.id]
    assert spaces.pending.get(running.id).status == "interrupted"
    assert spaces.pending.get(other.id).status == "pending"


def test_deleting_a_space_drops_its_runs_pending_calls(spaces: SpacesStore) -> None:
    space = spaces.create_space("k", "s", {}, 3600)
    spaces.create_run("run_1", space, {"protocolVersion": "1.0", "operations": []})
    raise_one(spaces.pending)
    spaces.delete_space(space.id)
    assert spaces.pending.list(status=None) == []
