"""Service behaviour that needs no HTTP: expiry cleanup, resume races."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from codeloop.spaces.database import open_store
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


async def test_runs_interrupted_by_a_server_stop_are_marked_error(tmp_path: Path) -> None:
    store = open_store(None, tmp_path)
    service = SpacesService(store)
    try:
        space = await service.create_space("k", "s", {}, ttl_s=3600)
        stopped = open_store(None, tmp_path)  # the store of the server that stopped mid-run
        stopped.create_run("run_x", space, {"protocolVersion": "1.0", "operations": []})
        stopped.append_event("run_x", {"type": "message", "timestamp": "t", "success": True}, 1)
        stopped.close()
        store.create_run("run_mine", space, {"protocolVersion": "1.0", "operations": []})
        assert await service.recover_interrupted_runs() == 1  # not the run this process executes
        assert store.get_run("run_mine").state == "running"  # type: ignore[union-attr]
        view = await service.run_view("k", "run_x")
        assert view["state"] == "error" and view["status"] == "error"
        assert view["events"][-1]["category"] == "system" and "index 1" in view["events"][-1]["message"]
    finally:
        await service.close()
        store.close()


def test_a_postgresql_run_is_orphaned_only_once_its_server_is_gone(tmp_path: Path, fresh_postgres: str) -> None:
    """Two servers share the store: a run the live one executes is never taken for interrupted;
    once that server's connections are gone (as when it is killed), the other one reports it."""
    live, other = open_store(fresh_postgres, tmp_path), open_store(fresh_postgres, tmp_path)
    try:
        space = live.create_space("k", "s", {}, 3600.0)
        live.create_run("run_y", space, {"protocolVersion": "1.0", "operations": []})
        assert other.orphaned_runs() == [] and other.orphaned_runs("run_y") == []
        live.close()
        deadline = time.monotonic() + 30  # the backend drops its locks once it sees the connection closed
        while not (orphans := other.orphaned_runs()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [r.id for r in orphans] == ["run_y"]
        other.finish_step("run_y", "error", 0, None)
        assert other.orphaned_runs() == []
    finally:
        other.close()


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
        assert await service.recover_interrupted_runs() == 1
        assert store.get_run(paused["runId"]).state == "awaiting_approval"  # type: ignore[union-attr]
        done = await service.continue_run("k", paused["runId"])
        assert done["status"] == "completed" and (Path(space.workspace) / "count").read_text() == "once\n"
        assert store.pending.get(asked.id).status == "ran"
    finally:
        await service.close()
        store.close()
