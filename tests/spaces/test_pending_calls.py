"""Spaces' approvals live in the spaces database's pending store (issue 34), black box: a real
``codeloop spaces serve`` on loopback, on SQLite and on PostgreSQL.

An operation the space's policy sends for approval is a pending call another process reads with
``PendingStore.list()``; two resumes sent at once give one run and one 409 saying who decided
and when; a server killed between the decision and the run runs the operation once when the
run is resumed, or reports it interrupted and goes on after it (issue 40), never twice.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .server_process import ServerProcess


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerProcess]:
    extra = ("--database", request.getfixturevalue("fresh_postgres")) if request.param == "postgresql" else ()
    # A short lease: a killed server's runs are taken over within seconds (issue 40).
    srv = ServerProcess(tmp_path / "data", *extra, "--lease-seconds", "1").start()
    yield srv
    srv.stop()


def _client(server: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.create_key('alice')}"},
                        timeout=120)


_STORE = """
import dataclasses, json, sys
from pathlib import Path
from codeloop.spaces.database import open_store
store = open_store(sys.argv[1] or None, Path(sys.argv[2]))
if sys.argv[3] == "list":
    print(json.dumps([dataclasses.asdict(c) for c in store.pending.list(session=sys.argv[4], status=sys.argv[5])]))
else:
    print(type(store.pending.decide(sys.argv[4], "approve", "a web page", "fine")).__name__)
store.close()
"""


def _store(server: ServerProcess, *args: str) -> str:
    """Run ``args`` against the server's database from another process (a web page, an editor)."""
    db = server.extra[1] if "--database" in server.extra else ""
    out = subprocess.run([sys.executable, "-c", _STORE, db, str(server.data_dir), *args],
                         capture_output=True, text=True, check=True, timeout=60)
    return out.stdout


def _listed(server: ServerProcess, run_id: str, status: str = "pending") -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = json.loads(_store(server, "list", run_id, status))
    return listed


def _paused(c: httpx.Client, command: str) -> tuple[str, str]:
    space = c.post("/v1/spaces", json={"name": "s"}).json()["id"]
    paused = c.post(f"/v1/spaces/{space}/runs", json={"protocolVersion": "1.0", "operations": [
        {"type": "shell", "id": "clean", "command": command},
        {"type": "shell", "id": "after", "command": "echo after >> after"}]}).json()
    assert paused["status"] == "awaiting_approval", paused
    return space, paused["runId"]


APPROVE = {"approval": {"operationId": "clean", "decision": "approved"}}


def test_an_ask_is_read_from_another_process_and_two_resumes_at_once_run_it_once(server: ServerProcess) -> None:
    with _client(server) as c:
        space, run = _paused(c, "rm -rf temp && echo ran >> log")
        [entry] = _listed(server, run)
        assert entry["face"] == "spaces" and entry["session"] == run and entry["step"] == "clean"
        assert entry["command"] == "rm -rf temp && echo ran >> log" and entry["status"] == "pending"

        answers: list[httpx.Response] = []
        gate = threading.Barrier(2)

        def resume() -> None:
            gate.wait()
            answers.append(c.post(f"/v1/runs/{run}/resume", json=APPROVE))

        threads = [threading.Thread(target=resume) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(r.status_code for r in answers)
        assert codes == [200, 409], [r.text for r in answers]
        refused = next(r for r in answers if r.status_code == 409).json()["error"]
        assert refused["code"] == "already_decided"
        assert "was already approved by " in refused["message"] and " at " in refused["message"]
        assert c.get(f"/v1/spaces/{space}/files/log").content == b"ran\n"
        assert c.get(f"/v1/spaces/{space}/files/after").content == b"after\n"
        assert _listed(server, run) == []
        [ran] = _listed(server, run, "ran")
        assert ran["id"] == entry["id"] and ran["decided_by"]


def test_a_decision_made_elsewhere_runs_once_after_a_crash_when_the_run_is_resumed(server: ServerProcess) -> None:
    with _client(server) as c:
        space, run = _paused(c, "rm -rf temp && echo ran >> log")
        [entry] = _listed(server, run)
        assert _store(server, "decide", entry["id"]).strip() == "Decided"  # decided; not yet run
        assert server.proc is not None
        server.proc.kill()  # the server dies before anything ran the approved operation
        server.proc.wait()
        server.start()
        late = c.post(f"/v1/runs/{run}/resume", json=APPROVE)
        assert late.status_code == 409 and "already approved by a web page" in late.json()["error"]["message"]
        done = c.post(f"/v1/runs/{run}/resume", json={})  # go on with what was decided
        assert done.status_code == 200 and done.json()["status"] == "completed", done.text
        assert c.get(f"/v1/spaces/{space}/files/log").content == b"ran\n"
        assert c.post(f"/v1/runs/{run}/resume", json={}).status_code == 409
        assert c.get(f"/v1/spaces/{space}/files/log").content == b"ran\n"


def test_a_server_killed_while_the_approved_operation_runs_reports_it_interrupted_and_the_run_goes_on(server: ServerProcess) -> None:
    with _client(server) as c:
        _, run = _paused(c, "rm -rf temp && echo ran >> log && sleep 600")
        [entry] = _listed(server, run)
        threading.Thread(target=lambda: _quietly(c, run), daemon=True).start()
        while not _listed(server, run, "running"):
            time.sleep(0.05)
        assert server.proc is not None
        server.proc.kill()
        server.proc.wait()
        server.start()
        deadline = time.monotonic() + 120  # taken over once the dead server's lease expires
        while (view := c.get(f"/v1/runs/{run}").json())["state"] == "running" and time.monotonic() < deadline:
            time.sleep(0.1)
        # The run goes on after the operation the kill cut, which is reported, not run again.
        assert view["state"] == "completed", view
        cut, after = view["events"][-2:]
        assert cut["operationId"] == "clean" and "interrupted" in cut["message"] and "not run again" in cut["message"]
        assert after["operationId"] == "after" and after["success"] is True
        assert c.get(f"/v1/spaces/{_space_of(c, run)}/files/log").content == b"ran\n"
        [interrupted] = _listed(server, run, "interrupted")
        assert interrupted["id"] == entry["id"]
        assert c.post(f"/v1/runs/{run}/resume", json=APPROVE).status_code == 409
        assert c.post(f"/v1/runs/{run}/resume", json={}).status_code == 409


def _space_of(c: httpx.Client, run: str) -> str:
    return str(c.get(f"/v1/runs/{run}").json()["spaceId"])


def _quietly(c: httpx.Client, run: str) -> None:
    try:
        c.post(f"/v1/runs/{run}/resume", json=APPROVE)
    except httpx.HTTPError:
        pass  # the server is killed under this request


def test_cancelling_a_paused_run_withdraws_its_pending_call(server: ServerProcess) -> None:
    with _client(server) as c:
        _, run = _paused(c, "rm -rf temp")
        [entry] = _listed(server, run)
        cancelled = c.post(f"/v1/runs/{run}/cancel").json()
        assert cancelled["state"] == "cancelled"
        assert _listed(server, run) == []
        [withdrawn] = _listed(server, run, "withdrawn")
        assert withdrawn["id"] == entry["id"] and "cancelled" in withdrawn["decision_reason"]
        assert [e["message"] for e in cancelled["events"][-2:]] == [
            "approval of operation clean withdrawn: the run was cancelled", "run cancelled"]
