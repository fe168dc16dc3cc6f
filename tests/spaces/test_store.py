"""The store behaves the same on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from codeloop.spaces.database import SpacesStore, hash_key, open_store


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SpacesStore:
    database = request.getfixturevalue("fresh_postgres") if request.param == "postgresql" else None
    s = open_store(database, tmp_path)
    request.addfinalizer(s.close)
    assert s.kind == request.param
    return s


def test_keys_are_stored_hashed(store: SpacesStore) -> None:
    key_id, secret = store.create_key("ci")
    assert store.key_owner(secret) == key_id
    assert store.key_owner(secret + "x") is None
    assert hash_key(secret) != secret


def test_spaces_are_per_owner_and_expire(store: SpacesStore) -> None:
    a = store.create_space("k1", "a", {"preset": "standard"}, 3600)
    store.create_space("k2", "b", {}, 3600)
    gone = store.create_space("k1", "old", {}, -1)
    assert [s.id for s in store.list_spaces("k1")] == [a.id]
    assert store.get_space(gone.id) is None
    assert [s.id for s in store.expired_spaces()] == [gone.id]
    assert Path(a.workspace).is_dir()


def test_run_events_and_cursor_persist(store: SpacesStore) -> None:
    space = store.create_space("k", "s", {}, 3600)
    store.create_run("run_1", space, {"protocolVersion": "1.0", "operations": []})
    assert store.append_event("run_1", {"type": "message"}, 1) == 1
    assert store.append_event("run_1", {"type": "shell"}, 2) == 2
    store.finish_step("run_1", "awaiting_approval", 2, "op-3")
    run = store.get_run("run_1")
    assert run is not None and (run.cursor, run.state, run.pending_operation) == (2, "awaiting_approval", "op-3")
    assert [e["type"] for _, e in store.events("run_1", after=1)] == ["shell"]


def test_claim_run_succeeds_exactly_once_under_races(store: SpacesStore) -> None:
    space = store.create_space("k", "s", {}, 3600)
    store.create_run("run_r", space, {})
    store.finish_step("run_r", "awaiting_approval", 0, "op-1")
    wins: list[bool] = []
    threads = [threading.Thread(target=lambda: wins.append(store.claim_run("run_r", "awaiting_approval")))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins.count(True) == 1


def test_bad_database_urls_give_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not supported"):
        open_store("mysql://x", tmp_path)
    with pytest.raises(ValueError, match="cannot open PostgreSQL store"):
        open_store("postgresql://nobody@127.0.0.1:1/db", tmp_path)
