"""Per-space run limits (issue 36): ``policy.limits.maxOperations`` and ``maxRunTime``, over a
real ``codeloop spaces serve`` on loopback and through ``codeloop spaces exec``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codeloop.spaces.database import open_store

from .server_process import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("spaces-limits")).start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    key = server.create_key("limits")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        yield c


def _ops(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"protocolVersion": "1.0", "operations": list(ops)}


def _space(c: httpx.Client, limits: dict[str, int]) -> str:
    r = c.post("/v1/spaces", json={"name": "limited", "policy": {"preset": "standard", "limits": limits}})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def _create(name: str) -> dict[str, Any]:
    return {"type": "createFile", "path": name, "content": name}


def _processes_with(marker: str) -> list[int]:
    """Host pids whose command line holds ``marker`` (a sandboxed process is seen here too)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmdline and "pytest" not in cmdline:
                found.append(int(proc.name))
    return found


def test_operation_limit_stops_before_the_next_operation_and_resumes_when_raised(client: httpx.Client) -> None:
    sid = _space(client, {"maxOperations": 2})
    first = client.post(f"/v1/spaces/{sid}/runs", json=_ops(_create("a.txt"), _create("b.txt"), _create("c.txt")))
    body = first.json()
    assert body["status"] == "error"
    assert [e["type"] for e in body["events"]] == ["createFile", "createFile", "error"]
    stop = body["events"][-1]
    assert stop["details"] == {"code": "budgetExceeded", "limit": "maxOperations", "used": 2, "max": 2,
                               "operationsDone": 2, "runTimeMs": stop["details"]["runTimeMs"]}
    assert "raise the space's limits.maxOperations" in stop["message"]
    rid = body["runId"]
    assert client.get(f"/v1/spaces/{sid}/files/c.txt").status_code == 404  # never one operation over
    assert client.get(f"/v1/runs/{rid}").json()["state"] == "limit_reached"

    # The stop is on the run's event stream as well.
    stream = client.get(f"/v1/runs/{rid}/events").text
    assert "event: error" in stream and '"budgetExceeded"' in stream and '"state": "limit_reached"' in stream

    refused = client.post(f"/v1/runs/{rid}/resume", json={})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "limit_not_raised"
    assert client.get(f"/v1/runs/{rid}").json()["state"] == "limit_reached"

    raised = client.patch(f"/v1/spaces/{sid}", json={"policy": {"preset": "standard", "limits": {"maxOperations": 3}}})
    assert raised.status_code == 200, raised.text
    resumed = client.post(f"/v1/runs/{rid}/resume", json={}).json()
    assert resumed["status"] == "completed"
    assert [e["type"] for e in resumed["events"]] == ["createFile"]
    assert client.get(f"/v1/spaces/{sid}/files/c.txt").content == b"c.txt"
    assert [e["type"] for e in client.get(f"/v1/runs/{rid}").json()["events"]] == \
        ["createFile", "createFile", "error", "createFile"]
    again = client.post(f"/v1/runs/{rid}/resume", json={})
    assert again.status_code == 409 and again.json()["error"]["code"] == "not_limit_reached"


def test_run_time_limit_cancels_the_operation_in_flight_and_its_processes(client: httpx.Client) -> None:
    r = client.post("/v1/spaces", json={"policy": {"limits": {"maxRunTime": 1000},
                                                   "shell": {"maxTimeout": 5000}}})  # a broken cancel ends soon
    sid = r.json()["id"]
    marker = "6123.25"
    body = client.post(f"/v1/spaces/{sid}/runs", json=_ops(
        {"type": "shell", "id": "slow", "command": f"sleep {marker} & sleep {marker}", "timeout": 600_000},
        _create("after.txt"))).json()
    assert body["status"] == "error"
    [stop] = body["events"]
    assert stop["type"] == "error" and stop["category"] == "timeout" and stop["operationId"] == "slow"
    assert stop["details"]["code"] == "budgetExceeded" and stop["details"]["limit"] == "maxRunTime"
    assert stop["details"]["used"] >= 1000 and stop["details"]["max"] == 1000
    assert "operation slow was cancelled" in stop["message"]
    deadline = time.monotonic() + 10  # a bound on reaping, not a measured threshold
    while _processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(f"sleep {marker}") == []  # the command and its background child died
    rid = body["runId"]
    assert client.get(f"/v1/spaces/{sid}/files/after.txt").status_code == 404

    refused = client.post(f"/v1/runs/{rid}/resume", json={})
    assert refused.status_code == 409 and "limits.maxRunTime" in refused.json()["error"]["message"]
    client.patch(f"/v1/spaces/{sid}", json={"policy": {"limits": {"maxRunTime": 600_000},
                                                       "shell": {"maxTimeout": 5000}}})
    resumed = client.post(f"/v1/runs/{rid}/resume", json={}).json()
    # The cancelled operation is not run again; the run goes on after it.
    assert resumed["status"] == "completed" and [e["type"] for e in resumed["events"]] == ["createFile"]
    assert client.get(f"/v1/spaces/{sid}/files/after.txt").status_code == 200


def test_a_space_without_limits_runs_as_before(client: httpx.Client) -> None:
    r = client.post("/v1/spaces", json={"name": "free"})
    sid = r.json()["id"]
    body = client.post(f"/v1/spaces/{sid}/runs", json=_ops(*[_create(f"f{i}.txt") for i in range(5)])).json()
    assert body["status"] == "completed" and len(body["events"]) == 5
    assert r.json()["policy"] == {}  # nothing is added to the stored policy


@pytest.mark.parametrize(("limits", "text"), [
    ({"maxOperations": -1}, "policy.limits.maxOperations"),
    ({"maxRunTime": 0}, "policy.limits.maxRunTime"),
    ({"maxRunTime": "1s"}, "policy.limits.maxRunTime"),
    ({"maxSteps": 3}, "policy.limits.maxSteps"),
])
def test_bad_limits_are_refused_with_the_field(client: httpx.Client, limits: dict[str, Any], text: str) -> None:
    r = client.post("/v1/spaces", json={"policy": {"limits": limits}})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_policy"
    assert text in r.json()["error"]["message"]


def test_resume_of_a_run_awaiting_approval_still_needs_an_approval(client: httpx.Client) -> None:
    r = client.post("/v1/spaces", json={"name": "ask"})
    sid = r.json()["id"]
    paused = client.post(f"/v1/spaces/{sid}/runs", json=_ops({"type": "shell", "command": "rm -rf t"})).json()
    assert paused["status"] == "awaiting_approval"
    empty = client.post(f"/v1/runs/{paused['runId']}/resume", json={})
    assert empty.status_code == 409 and empty.json()["error"]["code"] == "not_limit_reached"
    assert client.get(f"/v1/runs/{paused['runId']}").json()["state"] == "awaiting_approval"


def test_spaces_exec_honours_the_policy_files_limits(tmp_path: Path) -> None:
    (tmp_path / "policy.json").write_text(json.dumps({"preset": "standard", "limits": {"maxOperations": 1}}))
    (tmp_path / "ops.json").write_text(json.dumps(_ops(_create("one.txt"), _create("two.txt"))))
    done = subprocess.run([sys.executable, "-m", "codeloop.cli.main", "spaces", "exec", "-w", str(tmp_path / "ws"),
                           "--policy-file", str(tmp_path / "policy.json"), str(tmp_path / "ops.json")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "error"
    assert [e["type"] for e in out["events"]] == ["createFile", "error"]
    assert out["events"][-1]["details"]["code"] == "budgetExceeded"
    assert (tmp_path / "ws" / "one.txt").exists() and not (tmp_path / "ws" / "two.txt").exists()


def test_spaces_exec_refuses_bad_limits_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "policy.json").write_text(json.dumps({"limits": {"maxOperations": "many"}}))
    done = subprocess.run([sys.executable, "-m", "codeloop.cli.main", "spaces", "exec", "-w", str(tmp_path / "ws"),
                           "--policy-file", str(tmp_path / "policy.json"), "-"], input="{}",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "policy.limits.maxOperations" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_store_made_before_run_limits_gains_the_run_time_column(tmp_path: Path) -> None:
    db = tmp_path / "spaces.db"
    with sqlite3.connect(db) as conn:  # the runs table as it was before issue 36
        conn.execute("""CREATE TABLE runs (
            id TEXT PRIMARY KEY, space_id TEXT NOT NULL, owner TEXT NOT NULL, message TEXT NOT NULL,
            cursor INTEGER NOT NULL, state TEXT NOT NULL, pending_operation TEXT,
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL)""")
        conn.execute("INSERT INTO runs VALUES ('run_old', 'sp_x', 'local', '{}', 1, 'completed', NULL, 0, 1, 2)")
    store = open_store(None, tmp_path)
    try:
        old = store.get_run("run_old")
        assert old is not None and old.state == "completed" and old.run_time_ms == 0
        assert store.claim_run("run_old", "completed")  # leased here: its progress is recorded under the lease
        store.finish_step("run_old", "limit_reached", 1, None, 1234.5)
        again = store.get_run("run_old")
        assert again is not None and again.run_time_ms == 1234.5 and again.state == "limit_reached"
    finally:
        store.close()


def test_python_client_raises_the_limit_and_goes_on(server: ServerProcess) -> None:
    from codeloop.spaces.client import SpacesAPIError, SpacesClient

    with SpacesClient(server.url, server.create_key("client")) as c:
        space = c.create_space(policy={"limits": {"maxOperations": 1}})
        stopped = c.run(space.id, [_create("x.txt"), _create("y.txt")])
        assert stopped.status == "error" and c.get_run(stopped.runId).state == "limit_reached"
        with pytest.raises(SpacesAPIError) as refused:
            c.continue_run(stopped.runId)
        assert refused.value.code == "limit_not_raised"
        raised = c.update_space(space.id, policy={"limits": {"maxOperations": 2}})
        assert raised.policy == {"limits": {"maxOperations": 2}}
        went_on = c.continue_run(stopped.runId)
        assert went_on.status == "completed" and [e.type for e in went_on.events] == ["createFile"]
        assert c.read_file(space.id, "y.txt") == b"y.txt"
