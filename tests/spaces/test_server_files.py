"""The spaces HTTP file endpoints are pipeline calls (issue 30), against a real
``codeloop spaces serve`` on loopback: the space's policy and ``maxFileSize`` hold for
``GET .../files`` as they do for a run's ``readFile``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .server_process import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("spaces-files")).start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    key = server.create_key("files")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as c:
        yield c


def _space(client: httpx.Client, **policy: Any) -> str:
    r = client.post("/v1/spaces", json={"policy": {"preset": "standard", **policy}})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def _run(client: httpx.Client, sid: str, *ops: dict[str, Any]) -> dict[str, Any]:
    r = client.post(f"/v1/spaces/{sid}/runs", json={"protocolVersion": "1.0", "operations": list(ops)})
    assert r.status_code in (200, 201), r.text
    return dict(r.json())


def test_get_of_a_file_over_max_file_size_is_refused_without_reading_it(client: httpx.Client) -> None:
    sid = _space(client, filesystem={"maxFileSize": 1000})
    # A sparse file the size check must catch before a byte of it is read.
    out = _run(client, sid, {"type": "shell", "command": "truncate -s 50000000 big.bin && echo small > ok.txt"})
    assert out["events"][0]["success"], out
    r = client.get(f"/v1/spaces/{sid}/files/big.bin")
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "file_too_large"
    assert "over the 1000-byte limit" in r.json()["error"]["message"]
    # The run's readFile says the same of the same file.
    read = _run(client, sid, {"type": "readFile", "path": "big.bin"})["events"][0]
    assert read["success"] is False and "over the 1000-byte limit" in read["error"]
    assert client.get(f"/v1/spaces/{sid}/files/ok.txt").content == b"small\n"


def test_get_put_delete_follow_the_policy_where_links_lead(client: httpx.Client) -> None:
    r = client.post("/v1/spaces", json={"policy": {"preset": "permissive"}})
    sid = r.json()["id"]
    out = _run(client, sid, {"type": "shell", "command": "printf K=1 > .env && ln -s .env notes.txt && mkdir d"})
    assert out["events"][0]["success"], out
    assert client.patch(f"/v1/spaces/{sid}", json={"policy": {"preset": "standard"}}).status_code == 200
    for method in ("GET", "PUT", "DELETE"):
        r = client.request(method, f"/v1/spaces/{sid}/files/notes.txt", content=b"x" if method == "PUT" else None)
        assert r.status_code == 403, (method, r.text)
        assert r.json()["error"]["code"] == "policy_denied"
        assert "K=1" not in r.text
    listing = client.get(f"/v1/spaces/{sid}/files/d")
    assert listing.status_code == 200 and listing.json() == {"path": "d", "entries": []}
    assert client.get(f"/v1/spaces/{sid}/files/missing.txt").status_code == 404
