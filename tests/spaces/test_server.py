"""The HTTP API against a real ``codeloop spaces serve`` process on loopback (SQLite store)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .server_process import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("spaces-data")).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def key(server: ServerProcess) -> str:
    return server.create_key("alice")


def _client(server: ServerProcess, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def _space(client: httpx.Client, **body: Any) -> dict[str, Any]:
    r = client.post("/v1/spaces", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def _ops(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"protocolVersion": "1.0", "operations": list(ops)}


def test_health_and_openapi_need_no_key(server: ServerProcess) -> None:
    with _client(server, None) as c:
        assert c.get("/health").json()["status"] == "ok"
        doc = c.get("/openapi.json").json()
        assert "/v1/runs/{run_id}/resume" in doc["paths"] and "EventsMessage" in doc["components"]["schemas"]


@pytest.mark.parametrize("auth", [None, "Bearer nope", "Basic abc", "Bearer"])
def test_requests_without_a_valid_key_are_refused(server: ServerProcess, auth: str | None) -> None:
    headers = {"Authorization": auth} if auth else {}
    r = httpx.get(f"{server.url}/v1/spaces", headers=headers)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"


def test_another_tenants_space_and_runs_are_invisible(server: ServerProcess, key: str) -> None:
    bob = server.create_key("bob")
    with _client(server, key) as alice_c, _client(server, bob) as bob_c:
        space = _space(alice_c, name="alice-space")
        run = alice_c.post(f"/v1/spaces/{space['id']}/runs", json=_ops({"type": "message", "content": "hi"})).json()
        assert space["id"] not in [s["id"] for s in bob_c.get("/v1/spaces").json()["spaces"]]
        for method, path in [("GET", f"/v1/spaces/{space['id']}"), ("DELETE", f"/v1/spaces/{space['id']}"),
                             ("POST", f"/v1/spaces/{space['id']}/runs"), ("GET", f"/v1/runs/{run['runId']}"),
                             ("GET", f"/v1/spaces/{space['id']}/files/a.txt"),
                             ("POST", f"/v1/runs/{run['runId']}/cancel")]:
            r = bob_c.request(method, path, json=_ops())
            assert r.status_code == 404, (method, path, r.text)
        assert alice_c.get(f"/v1/spaces/{space['id']}").status_code == 200


def test_space_lifecycle_create_get_patch_extend_delete(server: ServerProcess, key: str) -> None:
    with _client(server, key) as c:
        space = _space(c, name="s1", policy={"preset": "restrictive"}, ttlSeconds=600)
        assert space["policy"] == {"preset": "restrictive"} and space["networkEnforcement"] in ("sandbox", "policy-only")
        patched = c.patch(f"/v1/spaces/{space['id']}", json={"name": "s2", "policy": {"preset": "permissive"}}).json()
        assert (patched["name"], patched["policy"]) == ("s2", {"preset": "permissive"})
        extended = c.post(f"/v1/spaces/{space['id']}/extend", json={"ttlSeconds": 3600}).json()
        assert extended["expiresAt"] >= space["expiresAt"] + 3599
        assert c.delete(f"/v1/spaces/{space['id']}").status_code == 204
        assert c.get(f"/v1/spaces/{space['id']}").status_code == 404


@pytest.mark.parametrize(
    ("body", "code", "text"),
    [
        ({"policy": {"preset": "lax"}}, "invalid_policy", "policy.preset"),
        ({"policy": {"shell": {"timeout": 5}}}, "invalid_policy", "policy.shell.timeout"),
        ({"ttlSeconds": 1}, "invalid_request", "ttlSeconds"),
        ({"colour": "red"}, "invalid_request", "colour"),
    ],
)
def test_bad_space_bodies_get_precise_errors(server: ServerProcess, key: str, body: Any, code: str, text: str) -> None:
    with _client(server, key) as c:
        r = c.post("/v1/spaces", json=body)
        assert r.status_code == 400 and r.json()["error"]["code"] == code and text in r.json()["error"]["message"]


def test_run_returns_events_message_and_files_api(server: ServerProcess, key: str) -> None:
    with _client(server, key) as c:
        space = _space(c)
        sid = space["id"]
        out = c.post(f"/v1/spaces/{sid}/runs", json=_ops(
            {"type": "createFile", "path": "src/a.txt", "content": "hello"},
            {"type": "shell", "command": "cat src/a.txt"})).json()
        assert out["status"] == "completed" and out["events"][1]["stdout"] == "hello"
        assert c.get(f"/v1/spaces/{sid}/files/src/a.txt").content == b"hello"
        assert c.put(f"/v1/spaces/{sid}/files/bin/x", content=b"\x00\x01").json()["bytesWritten"] == 2
        listing = c.get(f"/v1/spaces/{sid}/files/bin").json()
        assert listing["entries"][0]["name"] == "x"
        assert c.delete(f"/v1/spaces/{sid}/files/bin/x").status_code == 204
        assert c.get(f"/v1/spaces/{sid}/files/bin/x").status_code == 404
        assert c.put(f"/v1/spaces/{sid}/files/.env", content=b"K=1").status_code == 403
        runs = c.get(f"/v1/spaces/{sid}/runs").json()["runs"]
        assert [r["runId"] for r in runs] == [out["runId"]]
        full = c.get(f"/v1/runs/{out['runId']}").json()
        assert full["events"] == out["events"] and full["state"] == "completed"


def test_file_path_traversal_is_refused(server: ServerProcess, key: str) -> None:
    with _client(server, key) as c:
        sid = _space(c)["id"]
        r = c.get(f"/v1/spaces/{sid}/files/a/%2E%2E/%2E%2E/etc/passwd")
        assert r.status_code in (400, 404)
        assert "root:" not in r.text


def test_bad_operations_message_is_400_and_nothing_runs(server: ServerProcess, key: str) -> None:
    with _client(server, key) as c:
        sid = _space(c)["id"]
        r = c.post(f"/v1/spaces/{sid}/runs", json={"operations": [{"type": "shell", "command": "touch x"}]})
        assert r.status_code == 400 and "protocolVersion" in r.json()["error"]["message"]
        r = c.post(f"/v1/spaces/{sid}/runs", content=b"{oops")
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
        assert c.get(f"/v1/spaces/{sid}/runs").json()["runs"] == []


def test_approval_round_trip_over_http(server: ServerProcess, key: str) -> None:
    with _client(server, key) as c:
        sid = _space(c)["id"]
        paused = c.post(f"/v1/spaces/{sid}/runs", json=_ops(
            {"type": "shell", "id": "cleanup-1", "command": "rm -rf temp && echo ran >> log"},
            {"type": "shell", "command": "echo after"})).json()
        assert paused["status"] == "awaiting_approval"
        assert paused["events"][-1]["type"] == "approvalRequired"
        rid = paused["runId"]
        wrong = c.post(f"/v1/runs/{rid}/resume", json={"approval": {"operationId": "x", "decision": "approved"}})
        assert wrong.status_code == 409
        bad = c.post(f"/v1/runs/{rid}/resume", json={"approval": {"operationId": "cleanup-1", "decision": "maybe"}})
        assert bad.status_code == 400
        done = c.post(f"/v1/runs/{rid}/resume", json={"approval": {"operationId": "cleanup-1",
                                                                   "decision": "approved"}}).json()
        assert done["status"] == "completed"
        assert [e.get("operationId") for e in done["events"]] == ["cleanup-1", None]
        again = c.post(f"/v1/runs/{rid}/resume", json={"approval": {"operationId": "cleanup-1",
                                                                    "decision": "approved"}})
        assert again.status_code == 409
        assert c.get(f"/v1/spaces/{sid}/files/log").content == b"ran\n"


def test_denied_approval_and_cancel_of_paused_run(server: ServerProcess, key: str) -> None:
    with _client(server, key) as c:
        sid = _space(c)["id"]
        p1 = c.post(f"/v1/spaces/{sid}/runs", json=_ops({"type": "shell", "id": "a", "command": "rm -rf x"},
                                                         {"type": "message", "content": "m"})).json()
        denied = c.post(f"/v1/runs/{p1['runId']}/resume",
                        json={"approval": {"operationId": "a", "decision": "denied", "reason": "no"}}).json()
        assert [e["type"] for e in denied["events"]] == ["policyDenied", "message"]
        p2 = c.post(f"/v1/spaces/{sid}/runs", json=_ops({"type": "shell", "id": "b", "command": "rm -rf x"})).json()
        cancelled = c.post(f"/v1/runs/{p2['runId']}/cancel").json()
        assert cancelled["state"] == "cancelled" and cancelled["events"][-1]["message"] == "run cancelled"


def test_sse_streams_all_events_then_end(server: ServerProcess, key: str) -> None:
    with _client(server, key) as c:
        sid = _space(c)["id"]
        out = c.post(f"/v1/spaces/{sid}/runs", json=_ops({"type": "message", "content": "a"},
                                                          {"type": "shell", "command": "echo b"})).json()
        with c.stream("GET", f"/v1/runs/{out['runId']}/events") as stream:
            text = "".join(stream.iter_text())
        blocks = [b for b in text.split("\n\n") if b.strip()]
        assert blocks[0].startswith("id: 1\nevent: message\n")
        assert blocks[1].startswith("id: 2\nevent: shell\n")
        assert blocks[2].startswith("event: end\n") and '"state": "completed"' in blocks[2]
        with c.stream("GET", f"/v1/runs/{out['runId']}/events", headers={"Last-Event-ID": "1"}) as stream:
            resumed = "".join(stream.iter_text())
        assert resumed.startswith("id: 2\n")


def test_no_auth_is_refused_on_a_non_loopback_host(tmp_path: Path) -> None:
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "codeloop.cli.main", "spaces", "serve", "--no-auth", "--host",
                           "0.0.0.0", "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "loopback" in proc.stderr and "Traceback" not in proc.stderr


def test_no_auth_on_loopback_warns_loudly(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path, "--no-auth").start()
    try:
        assert httpx.get(f"{srv.url}/v1/spaces").status_code == 200
    finally:
        srv.stop()
    assert "WARNING: --no-auth" in srv.stderr


def test_paused_run_survives_server_restart(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path).start()
    try:
        k = srv.create_key()
        with _client(srv, k) as c:
            sid = _space(c)["id"]
            paused = c.post(f"/v1/spaces/{sid}/runs", json=_ops(
                {"type": "createFile", "path": "a", "content": "1"},
                {"type": "shell", "id": "rm", "command": "rm -rf a && echo gone > b"},
                {"type": "readFile", "path": "b"})).json()
            assert paused["status"] == "awaiting_approval"
        srv.restart()
        with _client(srv, k) as c:
            assert c.get(f"/v1/runs/{paused['runId']}").json()["state"] == "awaiting_approval"
            done = c.post(f"/v1/runs/{paused['runId']}/resume",
                          json={"approval": {"operationId": "rm", "decision": "approved"}}).json()
            assert done["status"] == "completed"
            assert done["events"][-1]["content"] == "gone\n"
            assert len(c.get(f"/v1/runs/{paused['runId']}").json()["events"]) == 4
    finally:
        srv.stop()


def test_two_servers_share_a_postgresql_store(tmp_path: Path, fresh_postgres: str) -> None:
    """A run paused on one server is resumed on another (replicas over one PostgreSQL store)."""
    a = ServerProcess(tmp_path, "--database", fresh_postgres).start()
    b = ServerProcess(tmp_path, "--database", fresh_postgres).start()
    try:
        k = a.create_key()
        with _client(a, k) as ca, _client(b, k) as cb:
            assert ca.get("/health").json()["store"] == "postgresql"
            sid = _space(ca)["id"]
            paused = ca.post(f"/v1/spaces/{sid}/runs", json=_ops(
                {"type": "shell", "id": "x", "command": "rm -rf t && echo ok"})).json()
            assert paused["status"] == "awaiting_approval"
            done = cb.post(f"/v1/runs/{paused['runId']}/resume",
                           json={"approval": {"operationId": "x", "decision": "approved"}}).json()
            assert done["events"][0]["stdout"] == "ok\n"
            assert ca.post(f"/v1/runs/{paused['runId']}/resume",
                           json={"approval": {"operationId": "x", "decision": "approved"}}).status_code == 409
    finally:
        a.stop()
        b.stop()


def _post_in_background(url: str, key: str, body: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    import threading

    result: list[dict[str, Any]] = []

    def go() -> None:
        result.append(httpx.post(url, json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60).json())

    t = threading.Thread(target=go)
    t.start()
    return t, result


def _wait_for_run(c: httpx.Client, sid: str) -> str:
    import time

    for _ in range(200):
        runs = c.get(f"/v1/spaces/{sid}/runs").json()["runs"]
        if runs:
            return str(runs[0]["runId"])
        time.sleep(0.05)
    raise AssertionError("run did not start")


def test_sse_delivers_events_while_the_run_is_running(server: ServerProcess, key: str) -> None:
    with _client(server, key) as c:
        sid = _space(c)["id"]
        t, result = _post_in_background(f"{server.url}/v1/spaces/{sid}/runs", key, _ops(
            {"type": "shell", "id": "s1", "command": "sleep 1; echo one"},
            {"type": "shell", "id": "s2", "command": "echo two"}))
        rid = _wait_for_run(c, sid)
        with c.stream("GET", f"/v1/runs/{rid}/events") as stream:
            text = "".join(stream.iter_text())
        t.join()
        assert '"operationId": "s1"' in text and '"operationId": "s2"' in text
        assert text.rstrip().endswith('"state": "completed"}')
        assert result[0]["status"] == "completed"


def test_cancel_of_running_run_stops_before_next_operation(server: ServerProcess, key: str) -> None:
    with _client(server, key) as c:
        sid = _space(c)["id"]
        t, result = _post_in_background(f"{server.url}/v1/spaces/{sid}/runs", key, _ops(
            {"type": "shell", "command": "sleep 1"},
            {"type": "createFile", "path": "never.txt", "content": "x"}))
        rid = _wait_for_run(c, sid)
        assert c.post(f"/v1/runs/{rid}/cancel").status_code == 200
        t.join()
        assert result[0]["status"] == "error"
        assert [e["type"] for e in result[0]["events"]] == ["shell", "error"]
        assert c.get(f"/v1/runs/{rid}").json()["state"] == "cancelled"
        assert c.get(f"/v1/spaces/{sid}/files/never.txt").status_code == 404


def test_user_message_approved_resumes_the_pending_operation(server: ServerProcess, key: str) -> None:
    with _client(server, key) as c:
        sid = _space(c)["id"]
        paused = c.post(f"/v1/spaces/{sid}/runs", json=_ops({"type": "shell", "command": "rm -rf t; echo y"})).json()
        bad = c.post(f"/v1/runs/{paused['runId']}/resume", json={"type": "userMessage", "content": "maybe"})
        assert bad.status_code == 400
        done = c.post(f"/v1/runs/{paused['runId']}/resume", json={"type": "userMessage", "content": "approved"}).json()
        assert done["status"] == "completed" and done["events"][0]["stdout"] == "y\n"
