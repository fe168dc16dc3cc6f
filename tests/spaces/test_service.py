"""Service behaviour that needs no HTTP: expiry cleanup, resume races, leases and takeover (issue 40)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from codeloop.spaces.database import open_store
from codeloop.spaces.leases import LeaseLostError
from codeloop.spaces.operations import Approval
from codeloop.spaces.service import SpacesService


async def test_expired_spaces_are_deleted_with_their_workspace(tmp_path: Path) -> None:
    store = open_store(None, tmp_path)
    service = SpacesService(store)
    try:
        old = await service.create_space("k", "old", {}, ttl_s=-1)
        live = await service.create_space("k", "live", {}, ttl_s=3600)
        (Path(old.workspace) / "f").write_text("x")
        assert await service.cleanup_expired() == 1
        assert not Path(old.workspace).exists()
        assert Path(live.workspace).is_dir()
        assert [s.id for s in store.list_spaces("k")] == [live.id]
    finally:
        await service.close()
        store.close()


async def test_concurrent_resumes_run_the_approved_operation_once(tmp_path: Path) -> None:
    store = open_store(None, tmp_path)
    service = SpacesService(store)
    try:
        space = await service.create_space("k", "s", {}, ttl_s=3600)
        paused = await service.start_run(space, {"protocolVersion": "1.0", "operations": [
            {"type": "shell", "id": "x", "command": "rm -rf nothing; echo once >> count"}]})
        approval = Approval(operationId="x", decision="approved")
        results = await asyncio.gather(*(service.resume("k", paused["runId"], approval) for _ in range(5)),
                                       return_exceptions=True)
        assert sum(isinstance(r, dict) for r in results) == 1
        assert (Path(space.workspace) / "count").read_text() == "once\n"
    finally:
        await service.close()
        store.close()


def _message(*ops: dict[str, object]) -> dict[str, object]:
    return {"protocolVersion": "1.0", "operations": list(ops)}


async def test_a_run_whose_server_stopped_goes_on_here_after_the_cut_operation(tmp_path: Path) -> None:
    """Issue 40: the operation whose start was recorded and whose end was not is reported
    interrupted and never run again; the run goes on from the next one."""
    store = open_store(None, tmp_path)
    service = SpacesService(store, sandbox=False)
    try:
        space = await service.create_space("k", "s", {}, ttl_s=3600)
        stopped = open_store(None, tmp_path)  # the store of the server that stopped mid-run
        stopped.create_run("run_x", space, _message(
            {"type": "message", "id": "hi"}, {"type": "shell", "id": "cut", "command": "echo cut >> log"},
            {"type": "shell", "id": "next", "command": "echo next >> log"}))
        stopped.append_event("run_x", {"type": "message", "timestamp": "t", "operationId": "hi"}, 1)
        stopped.leases.record_start("run_x", 1)  # then the server died
        stopped.close()
        store.create_run("run_mine", space, _message())
        assert await service.take_over_runs() == 1  # not the run this process executes
        await service.settle()
        assert store.get_run("run_mine").state == "running"  # type: ignore[union-attr]
        view = await service.run_view("k", "run_x")
        assert view["state"] == "completed", view
        assert [e.get("operationId") for e in view["events"]] == ["hi", "cut", "next"]
        assert view["events"][1]["category"] == "system" and "not run again" in view["events"][1]["message"]
        assert (Path(space.workspace) / "log").read_text() == "next\n"
    finally:
        await service.close()
        store.close()


async def test_a_cut_operation_idempotent_by_type_is_run_again_on_takeover(tmp_path: Path) -> None:
    store = open_store(None, tmp_path)
    service = SpacesService(store, sandbox=False)
    try:
        space = await service.create_space("k", "s", {}, ttl_s=3600)
        stopped = open_store(None, tmp_path)
        stopped.create_run("run_x", space, _message(
            {"type": "createFile", "id": "w", "path": "f", "content": "whole\n", "overwrite": True}))
        stopped.leases.record_start("run_x", 0)
        stopped.close()
        assert await service.take_over_runs() == 1
        await service.settle()
        view = await service.run_view("k", "run_x")
        assert view["state"] == "completed" and view["events"][-1]["success"] is True, view
        assert (Path(space.workspace) / "f").read_text() == "whole\n"
    finally:
        await service.close()
        store.close()


def test_a_replica_paused_past_its_lease_records_nothing_after_the_takeover(tmp_path: Path,
                                                                             fresh_postgres: str) -> None:
    """Two replicas share a PostgreSQL store: a run whose lease is renewed is never taken; once
    it expired (here: set so, as a SIGSTOP past it would), the other replica takes the run with
    the operation it cut, and every later record of the first one is refused (fencing)."""
    live, other = open_store(fresh_postgres, tmp_path, lease_s=3600), open_store(fresh_postgres, tmp_path)
    try:
        space = live.create_space("k", "s", {}, 3600.0)
        live.create_run("run_y", space, _message({"type": "message"}, {"type": "message"}))
        live.leases.record_start("run_y", 0)
        assert other.take_over_runs() == [] and other.take_over_runs("run_y") == []
        assert live.leases.renew() == []
        other.execute("UPDATE run_leases SET expires_at = 0")  # the lease ran out while live was paused
        [(run, lease)] = other.take_over_runs()
        assert run.id == "run_y" and lease.started == 0 and lease.token == 2
        with pytest.raises(LeaseLostError):
            live.append_event("run_y", {"type": "message"}, 1)
        with pytest.raises(LeaseLostError):
            live.leases.record_start("run_y", 1)
        with pytest.raises(LeaseLostError):
            live.finish_step("run_y", "completed", 2, None)
        assert live.leases.renew() == ["run_y"]
        assert other.events("run_y") == []  # nothing of the paused replica's was recorded
        other.append_event("run_y", {"type": "message"}, 1)
        other.finish_step("run_y", "completed", 2, None)
        assert other.get_run("run_y").state == "completed"  # type: ignore[union-attr]
        assert other.take_over_runs() == []
    finally:
        live.close()
        other.close()


def test_one_space_runs_on_one_replica_at_a_time(tmp_path: Path, fresh_postgres: str) -> None:
    a, b = open_store(fresh_postgres, tmp_path), open_store(fresh_postgres, tmp_path)
    try:
        space = a.create_space("k", "s", {}, 3600.0)
        a.create_run("run_a", space, _message())
        b.create_run("run_b", space, _message())
        assert a.leases.acquire_space(space.id, "run_a")
        assert not b.leases.acquire_space(space.id, "run_b")
        a.leases.release_space(space.id, "run_a")
        assert b.leases.acquire_space(space.id, "run_b")
    finally:
        a.close()
        b.close()


def test_every_replica_hears_of_each_event_any_replica_commits(tmp_path: Path, fresh_postgres: str) -> None:
    listener, writer = open_store(fresh_postgres, tmp_path), open_store(fresh_postgres, tmp_path)
    heard: list[str] = []
    try:
        listener.listen(heard.append)
        space = writer.create_space("k", "s", {}, 3600.0)
        writer.create_run("run_z", space, _message())
        writer.append_event("run_z", {"type": "message"}, 1)
        deadline = time.monotonic() + 30
        while "run_z" not in heard and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "run_z" in heard
    finally:
        listener.close()
        writer.close()


async def test_a_run_taken_after_its_approval_by_a_server_that_died_runs_it_once_on_resume(tmp_path: Path) -> None:
    store = open_store(None, tmp_path)
    service = SpacesService(store)
    try:
        space = await service.create_space("k", "s", {}, ttl_s=3600)
        paused = await service.start_run(space, {"protocolVersion": "1.0", "operations": [
            {"type": "shell", "id": "x", "command": "rm -rf nothing; echo once >> count"}]})
        [asked] = store.pending.list(session=paused["runId"])
        store.pending.decide(asked.id, "approve", "alice")
        dead = open_store(None, tmp_path)  # a server that took the run, then died before running anything
        assert dead.claim_run(paused["runId"], "awaiting_approval")
        dead.close()
        assert await service.take_over_runs() == 1
        await service.settle()
        assert store.get_run(paused["runId"]).state == "awaiting_approval"  # type: ignore[union-attr]
        done = await service.continue_run("k", paused["runId"])
        assert done["status"] == "completed" and (Path(space.workspace) / "count").read_text() == "once\n"
        assert store.pending.get(asked.id).status == "ran"
    finally:
        await service.close()
        store.close()


async def test_a_cancel_sent_to_another_replica_stops_the_run_before_its_next_operation(
        tmp_path: Path, fresh_postgres: str) -> None:
    runner_store, other_store = open_store(fresh_postgres, tmp_path), open_store(fresh_postgres, tmp_path)
    runner, other = SpacesService(runner_store, sandbox=False), SpacesService(other_store, sandbox=False)
    try:
        space = await runner.create_space("k", "s", {}, ttl_s=3600)
        steps = [{"type": "shell", "id": f"s{i}", "command": f"sleep 0.3; echo {i} >> log"} for i in range(20)]
        task = asyncio.create_task(runner.start_run(space, _message(*steps)))
        while not [r for r in runner_store.list_runs(space.id) if r.cursor >= 1]:
            await asyncio.sleep(0.02)
        [run] = runner_store.list_runs(space.id)
        await other.cancel("k", run.id)  # the request reached the other replica
        await runner.keep_leases()  # the runner's next renewal sees the mark
        answer = await task
        assert answer["status"] == "error" and answer["events"][-1]["message"] == "run cancelled"
        assert runner_store.get_run(run.id).state == "cancelled"  # type: ignore[union-attr]
        assert len((Path(space.workspace) / "log").read_text().splitlines()) < 20
    finally:
        await runner.close()
        await other.close()
        runner_store.close()
        other_store.close()


async def test_a_cut_operation_stays_cut_when_the_replica_that_took_the_run_dies_too(tmp_path: Path) -> None:
    store = open_store(None, tmp_path)
    service = SpacesService(store, sandbox=False)
    try:
        space = await service.create_space("k", "s", {}, ttl_s=3600)
        first = open_store(None, tmp_path)
        first.create_run("run_x", space, _message({"type": "shell", "id": "cut", "command": "echo cut >> log"}))
        first.leases.record_start("run_x", 0)
        first.close()
        taker = open_store(None, tmp_path)  # takes the run over, then dies before reporting the cut
        [(_, lease)] = taker.take_over_runs()
        assert lease.started == 0
        taker.close()
        assert await service.take_over_runs() == 1
        await service.settle()
        view = await service.run_view("k", "run_x")
        assert view["state"] == "completed" and "not run again" in view["events"][-1]["message"], view
        assert not (Path(space.workspace) / "log").exists()
    finally:
        await service.close()
        store.close()
