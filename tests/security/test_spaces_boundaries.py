"""Spaces and codali against hostile input and hostile tenants (issue 22; docs/security.md).

Class 2: the server keeps answering while a tenant's operation blocks. Class 5: without
the sandbox, a command that is not read-only asks. Class 7: input limits (nesting depth,
text that cannot be encoded, maxFileSize of an edit's result). Class 10: a tenant cannot
see another tenant's workspace or the server's data. All against a real server process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codeloop.codali.request import AgentRequestError, parse_agent_request
from spaces.server_process import ServerProcess
from spaces.test_server import server

__all__ = ["server"]  # the sandboxed server of the HTTP API tests

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    key = server.create_key("tenant")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        yield c


def _space(c: httpx.Client, **body: Any) -> str:
    r = c.post("/v1/spaces", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def _run(c: httpx.Client, sid: str, *ops: dict[str, Any]) -> dict[str, Any]:
    r = c.post(f"/v1/spaces/{sid}/runs", json={"protocolVersion": "1.0", "operations": list(ops)})
    assert r.status_code == 200, r.text
    return dict(r.json())


# --- class 7: input limits ---------------------------------------------------------------------


@pytest.mark.parametrize("body", [
    DEEP,
    '{"protocolVersion": "1.0", "operations": [{"type": "shell", "command": "ls", "env": ' + DEEP + "}]}",
    '{"a":' * 5000 + "1" + "}" * 5000,
])
def test_deeply_nested_json_is_a_clear_400_not_a_500(server: ServerProcess, client: httpx.Client, body: str) -> None:
    sid = _space(client)
    for url in (f"/v1/spaces/{sid}/runs", "/v1/spaces"):
        r = client.post(url, content=body.encode(), headers={"Content-Type": "application/json"})
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == "invalid_input" and "deeper than 64 levels" in r.text
    assert client.get(f"/v1/spaces/{sid}/runs").json()["runs"] == []
    assert httpx.get(f"{server.url}/health").status_code == 200


def test_lone_surrogate_in_create_file_is_refused_naming_the_field_before_anything_runs(
        client: httpx.Client) -> None:
    sid = _space(client)
    body = ('{"protocolVersion": "1.0", "operations": [{"type": "shell", "command": "touch ran"}, '
            '{"type": "createFile", "path": "s.txt", "content": "a\\ud800b"}]}')
    r = client.post(f"/v1/spaces/{sid}/runs", content=body.encode(), headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "operations[1].content" in r.json()["error"]["message"], r.text
    assert client.get(f"/v1/spaces/{sid}/runs").json()["runs"] == []
    for name in ("s.txt", "ran"):
        assert client.get(f"/v1/spaces/{sid}/files/{name}").status_code == 404


def test_edit_whose_result_exceeds_max_file_size_is_refused_and_the_file_kept(client: httpx.Client) -> None:
    sid = _space(client, policy={"filesystem": {"maxFileSize": 100}})
    done = _run(client, sid, {"type": "createFile", "path": "f.txt", "content": "x" * 90},
                {"type": "editFile", "path": "f.txt", "edits": [{"oldContent": "x", "newContent": "y" * 50}]})
    edit = done["events"][1]
    assert edit["success"] is False and "over the 100-byte limit" in edit["error"], edit
    assert client.get(f"/v1/spaces/{sid}/files/f.txt").content == b"x" * 90


def _spaces_exec(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeloop.cli.main", "spaces", "exec", "-w", str(tmp_path / "ws"), "-"],
                          input=text, capture_output=True, text=True, timeout=60, env=dict(os.environ))


@pytest.mark.parametrize(("text", "message"), [
    (DEEP, "deeper than 64 levels"),
    ('{"protocolVersion": "1.0", "operations": [{"type": "createFile", "path": "s.txt", "content": "\\udc80"}]}',
     "operations[0].content"),
])
def test_spaces_exec_refuses_bad_input_with_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    done = _spaces_exec(tmp_path, text)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "ws" / "s.txt").exists()


@pytest.mark.parametrize("reply", [
    "AGENT_REQUEST v1\n" + DEEP,
    'Here it is: {"role": "architect", "needs": ' + DEEP + "}",
    "AGENT_REQUEST v1\nrole: architect\nneeds: " + "[" * 50_000,
    'He said "x {"needs": "y", "q": ' + "[" * 50_000 + "]" * 50_000 + "}",
    'say " {"needs": ' + "[" * 50_000 + "]" * 50_000 + '} "',  # quotes hide the nesting from the scan
])
def test_codali_deeply_nested_request_is_a_request_error(reply: str) -> None:
    with pytest.raises(AgentRequestError, match=r"deeper than|nest"):
        parse_agent_request(reply)


def test_codali_cli_names_the_nesting_problem(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "codeloop.cli.main", "codali", "answer", "--repo", str(tmp_path), "-"],
                          input="AGENT_REQUEST v1\n" + DEEP, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "deeper than 64 levels" in done.stderr and "Traceback" not in done.stderr


# --- class 2: the server never blocks on a tenant's operation -------------------------------------


def test_health_answers_while_a_tenant_operation_blocks(server: ServerProcess, client: httpx.Client) -> None:
    sid = _space(client)
    assert _run(client, sid, {"type": "shell", "command": "mkfifo p"})["status"] == "completed"
    fifo = server.data_dir / "workspaces" / sid / "p"
    result: list[dict[str, Any]] = []
    blocked = threading.Thread(target=lambda: result.append(client.post(f"/v1/spaces/{sid}/runs", json={
        "protocolVersion": "1.0", "operations": [{"type": "shell", "command": "cat p", "timeout": 600_000}]}).json()))
    blocked.start()
    try:
        running: list[dict[str, Any]] = []
        while not running and blocked.is_alive():
            running = [r for r in client.get(f"/v1/spaces/{sid}/runs").json()["runs"] if r["state"] == "running"]
        rid = running[0]["runId"]
        assert httpx.get(f"{server.url}/health", timeout=60).json()["status"] == "ok"
        # A read of the FIFO itself is refused at once instead of freezing the server.
        read = client.get(f"/v1/spaces/{sid}/files/p")
        assert 400 <= read.status_code < 500, read.text
        assert client.get(f"/v1/runs/{rid}").json()["state"] == "running"  # all of it while `cat p` waits
    finally:
        with open(fifo, "w") as writer:  # the reader is there: this does not block; cat ends
            writer.write("released\n")
        blocked.join(60)
    assert result[0]["status"] == "completed" and result[0]["events"][0]["stdout"] == "released\n"


# --- class 10: tenants cannot read each other ----------------------------------------------------


def test_a_tenant_cannot_list_or_read_another_workspace_or_the_data_dir(
        server: ServerProcess, client: httpx.Client) -> None:
    victim = _space(client)
    _run(client, victim, {"type": "createFile", "path": "secret.txt", "content": "TOPSECRET-1234"})
    attacker = _space(client, policy={"preset": "permissive"})
    data, other = server.data_dir, server.data_dir / "workspaces" / victim
    done = _run(client, attacker, *({"type": "shell", "command": c} for c in (
        f"cat {other}/secret.txt", f"ls -a {other}", f"ls -a {data}", f"ls -a {data}/workspaces",
        f"cat ../{victim}/secret.txt", f"find / -name secret.txt 2>/dev/null; ls {data}/*.db")))
    for event in done["events"]:
        assert event["type"] == "shell", event  # each ran: the sandbox, not the policy, is what holds
        assert "TOPSECRET" not in event["stdout"] and "secret.txt" not in event["stdout"], event
        assert victim not in event["stdout"] and ".db" not in event["stdout"], event


# --- class 5: without the sandbox, commands that are not read-only ask ---------------------------


@pytest.fixture(scope="module")
def unsandboxed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("nosandbox-data"), "--no-sandbox").start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("command", ["cd .. && echo > x", "touch ../y", "sh -c 'echo > ../../z'", "python3 -c 'open(\"../w\", \"w\")'"])
def test_no_sandbox_asks_before_commands_that_are_not_read_only(unsandboxed: ServerProcess, command: str) -> None:
    key = unsandboxed.create_key()
    with httpx.Client(base_url=unsandboxed.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        sid = _space(c, policy={"preset": "permissive"})
        done = _run(c, sid, {"type": "shell", "command": "ls"}, {"type": "shell", "id": "w", "command": command})
    assert done["status"] == "awaiting_approval"
    assert done["events"][0]["type"] == "shell" and done["events"][0]["success"]  # read-only: runs
    asked = done["events"][1]
    assert asked["type"] == "approvalRequired" and asked["details"]["policy"] == "sandbox.unavailable"
    assert not any((unsandboxed.data_dir / "workspaces" / name).exists() for name in ("x", "y", "w"))
    assert not (unsandboxed.data_dir / "z").exists()


def test_no_sandbox_server_says_so_loudly(unsandboxed: ServerProcess) -> None:
    unsandboxed.restart()
    unsandboxed.stop()
    assert "NO SANDBOX" in unsandboxed.stderr and "waits for approval" in unsandboxed.stderr
    unsandboxed.start()
