"""The pending-call store (issue 34): JSON form, one compare-and-set per answer, across processes."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.policy.approval import Effect, ToolCallRequest
from codeloop.policy.model import Decision
from codeloop.policy.pending import (
    AlreadyDecided,
    Decided,
    PendingCall,
    PendingCallError,
    SqlitePendingStore,
    UnknownPendingCallError,
)

SHELL = ToolCallRequest("shell", {"command": "git commit -m x"}, "call-1", frozenset({Effect.EXEC, Effect.READ}),
                        None, "git commit -m x")


def raise_one(store: SqlitePendingStore, session: str = "s1", remember_as: tuple[str, ...] = ()) -> PendingCall:
    return store.add(PendingCall.raise_for(SHELL, Decision.ask("runs git", "approval.on-risk"), session=session,
                                           face="run", step=3, remember_as=remember_as))


@pytest.fixture
def store(tmp_path: Path) -> SqlitePendingStore:
    return SqlitePendingStore(tmp_path / "approvals.sqlite3")


# --- the JSON form -----------------------------------------------------------------------

_text = st.text(max_size=20)
_json_value = st.recursive(st.none() | st.booleans() | st.integers() | _text,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
                           max_leaves=8)
_entries = st.builds(
    PendingCall,
    id=_text, session=_text, face=st.sampled_from(["run", "relay", "spaces", "tool", "codali"]),
    step=st.none() | st.integers() | _text, tool=_text, arguments=st.dictionaries(_text, _json_value, max_size=4),
    command=st.none() | _text, paths=st.none() | st.lists(_text, max_size=3).map(tuple),
    effects=st.lists(st.sampled_from(["read", "write", "exec", "network"]), unique=True).map(tuple),
    reason=_text, rule=st.none() | _text,
    grants=st.sampled_from([("once",), ("once", "always")]), remember_as=st.lists(_text, max_size=3).map(tuple),
    created_at=st.floats(allow_nan=False, allow_infinity=False),
    call_id=st.none() | _text,
    status=st.sampled_from(["pending", "approved", "denied", "withdrawn", "running", "ran", "interrupted"]),
    decided_by=st.none() | _text, decided_at=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    decision_reason=_text, scope=st.sampled_from([None, "once", "always"]),
)


@settings(max_examples=200)
@given(_entries)
def test_json_form_round_trips_through_json_text(entry: PendingCall) -> None:
    """What ``--json`` prints reads back as the same entry."""
    assert PendingCall.from_json(json.loads(json.dumps(entry.to_json()))) == entry


@settings(max_examples=300)
@given(_entries, st.sampled_from(list(PendingCall.__dataclass_fields__)), _json_value)
def test_a_malformed_json_form_is_refused_with_one_line_naming_the_field(
        entry: PendingCall, key: str, value: object) -> None:
    """Whatever a field is replaced by, the result is an equal entry or a one-line error."""
    data = entry.to_json()
    data[key] = value
    try:
        read = PendingCall.from_json(data)
    except PendingCallError as exc:
        assert "\n" not in str(exc) and (repr(key) in str(exc) or "JSON object" in str(exc))
    else:
        assert read.to_json()[key] == value or isinstance(value, int)


@pytest.mark.parametrize("data", [None, [], "x", {"id": "x"}])
def test_not_an_entry_is_refused(data: object) -> None:
    with pytest.raises(PendingCallError):
        PendingCall.from_json(data)


# --- one answer, once --------------------------------------------------------------------

def test_an_ask_holds_what_runs_and_why(store: SqlitePendingStore) -> None:
    entry = raise_one(store, remember_as=("git commit",))
    got = store.get(entry.id)
    assert (got.tool, got.command, got.arguments, got.paths, got.effects) == (
        "shell", "git commit -m x", {"command": "git commit -m x"}, None, ("exec", "read"))
    assert (got.reason, got.rule, got.session, got.step, got.face) == ("runs git", "approval.on-risk", "s1", 3, "run")
    assert (got.grants, got.remember_as, got.status, got.call_id) == (("once", "always"), ("git commit",),
                                                                      "pending", "call-1")
    assert [e.id for e in store.list()] == [entry.id]


def test_the_first_answer_wins_and_the_second_is_told_who_answered(store: SqlitePendingStore) -> None:
    entry = raise_one(store)
    first = store.decide(entry.id, "approve", "alice", "looks fine")
    second = store.decide(entry.id, "deny", "bob", "no")
    assert isinstance(first, Decided) and first.entry.status == "approved"
    assert first.entry.decided_by == "alice" and first.entry.decision_reason == "looks fine"
    assert isinstance(second, AlreadyDecided)
    assert (second.by, second.verdict, second.at) == ("alice", "approved", first.entry.decided_at)
    assert "already approved by alice" in second.describe(entry.id)
    assert store.get(entry.id).status == "approved" and store.list() == []


def test_always_is_granted_only_when_something_can_be_remembered(store: SqlitePendingStore) -> None:
    plain = raise_one(store)
    with pytest.raises(PendingCallError, match="once only"):
        store.decide(plain.id, "approve", "alice", scope="always")
    assert store.get(plain.id).status == "pending"
    remembered = raise_one(store, remember_as=("git commit",))
    decided = store.decide(remembered.id, "approve", "alice", scope="always")
    assert isinstance(decided, Decided) and decided.entry.scope == "always"


@pytest.mark.parametrize(("verdict", "scope"), [("maybe", "once"), ("approve", "forever"), ("deny", "always")])
def test_a_malformed_answer_changes_nothing(store: SqlitePendingStore, verdict: str, scope: str) -> None:
    entry = raise_one(store, remember_as=("git commit",))
    with pytest.raises(PendingCallError):
        store.decide(entry.id, verdict, "alice", scope=scope)
    assert store.get(entry.id).status == "pending"


def test_an_unknown_id_says_so_in_one_line(store: SqlitePendingStore) -> None:
    for action in (lambda: store.get("nope"), lambda: store.decide("nope", "approve", "a"),
                   lambda: store.claim("nope"), lambda: store.finish("nope")):
        with pytest.raises(UnknownPendingCallError) as info:
            action()
        assert str(info.value) == "no pending call 'nope' (list them with 'codeloop approvals list --all')"


def test_only_one_claim_of_an_approved_call_may_run_it(store: SqlitePendingStore) -> None:
    entry = raise_one(store)
    assert not store.claim(entry.id)  # not approved yet
    store.decide(entry.id, "approve", "alice")
    assert [store.claim(entry.id), store.claim(entry.id)] == [True, False]
    store.finish(entry.id)
    assert store.get(entry.id).status == "ran"
    assert not store.claim(entry.id)


def test_a_denied_call_cannot_be_claimed(store: SqlitePendingStore) -> None:
    entry = raise_one(store)
    store.decide(entry.id, "deny", "alice", "not now")
    assert not store.claim(entry.id)
    assert store.get(entry.id).decision_reason == "not now"


def test_withdraw_takes_back_only_the_waiting_calls_of_that_session(store: SqlitePendingStore) -> None:
    waiting, answered, other = raise_one(store), raise_one(store), raise_one(store, session="s2")
    store.decide(answered.id, "approve", "alice")
    withdrawn = store.withdraw("s1", "the session was cancelled")
    assert [e.id for e in withdrawn] == [waiting.id]
    assert (withdrawn[0].status, withdrawn[0].decided_by, withdrawn[0].decision_reason) == (
        "withdrawn", "codeloop", "the session was cancelled")
    late = store.decide(waiting.id, "approve", "bob")
    assert isinstance(late, AlreadyDecided) and late.verdict == "withdrawn"
    assert [store.get(i).status for i in (answered.id, other.id)] == ["approved", "pending"]


def test_a_call_claimed_and_never_finished_is_interrupted_on_restart(store: SqlitePendingStore) -> None:
    running, approved = raise_one(store), raise_one(store)
    for entry in (running, approved):
        store.decide(entry.id, "approve", "alice")
    store.claim(running.id)
    reopened = SqlitePendingStore(store.path)  # the owner restarts
    assert [e.id for e in reopened.interrupt("s1")] == [running.id]
    assert reopened.get(running.id).status == "interrupted" and not reopened.claim(running.id)
    assert reopened.claim(approved.id)  # approved but never claimed: runs once on resume


def test_list_filters_by_session_and_status(store: SqlitePendingStore) -> None:
    a, b = raise_one(store), raise_one(store, session="s2")
    store.decide(a.id, "deny", "x")
    assert [e.id for e in store.list(session="s2")] == [b.id]
    assert [e.id for e in store.list(status="denied")] == [a.id]
    assert {e.id for e in store.list(status=None)} == {a.id, b.id}


def test_wait_returns_the_answer_given_elsewhere(store: SqlitePendingStore) -> None:
    entry = raise_one(store)
    timer = threading.Timer(0.05, lambda: SqlitePendingStore(store.path).decide(entry.id, "deny", "bob", "why"))
    timer.start()
    got = asyncio.run(store.wait(entry.id, poll_interval=0.01))
    timer.join()
    assert (got.status, got.decided_by, got.decision_reason) == ("denied", "bob", "why")


def test_nothing_is_written_until_a_call_is_added_and_then_in_wal_mode(store: SqlitePendingStore) -> None:
    assert store.list() == [] and store.withdraw("s1", "x") == [] and store.interrupt("s1") == []
    assert not store.path.exists()
    deeper = SqlitePendingStore(store.path.parent / "state" / "approvals.sqlite3")
    assert deeper.list(status=None) == [] and not deeper.path.parent.exists()  # a read creates nothing
    raise_one(store)
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# --- many processes at once --------------------------------------------------------------

def _answer(path: str, pending_id: str, who: str, barrier: multiprocessing.synchronize.Barrier,
            results: multiprocessing.queues.Queue[tuple[str, str, bool]]) -> None:
    store = SqlitePendingStore(path)
    barrier.wait()
    answer = store.decide(pending_id, "approve", who)
    results.put((who, type(answer).__name__, store.claim(pending_id)))


def test_answers_from_many_processes_at_once_make_exactly_one_decision(store: SqlitePendingStore) -> None:
    """N processes decide and claim the same call at the same instant: one Decided, one claim."""
    entry = raise_one(store)
    n = 8
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(n), ctx.Queue()
    workers = [ctx.Process(target=_answer, args=(str(store.path), entry.id, f"p{i}", barrier, results))
               for i in range(n)]
    for w in workers:
        w.start()
    got = [results.get(timeout=60) for _ in workers]
    for w in workers:
        w.join(timeout=60)
    assert sorted(kind for _, kind, _ in got).count("Decided") == 1
    assert [claimed for *_, claimed in got].count(True) == 1
    winner = next(who for who, kind, _ in got if kind == "Decided")
    assert store.get(entry.id).decided_by == winner
