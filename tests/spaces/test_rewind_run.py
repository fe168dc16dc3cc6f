"""``POST /v1/runs/{id}/rewind`` (issue 35) against a real ``codeloop spaces serve`` process: a
run's shell changes — an edit, a deleted file, a new directory, a mode — are put back."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .server_process import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("spaces-data")).start()
    srv.state_dir = Path(os.environ["CODELOOP_STATE_DIR"])  # type: ignore[attr-defined]  # what it inherited
    yield srv
    srv.stop()


def test_a_run_is_rewound_with_dry_run_and_refusal_of_outside_changes(server: ServerProcess) -> None:
    key = server.create_key("rw")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        space = c.post("/v1/spaces", json={"name": "rw", "policy": {"preset": "permissive"}}).json()
        sid = space["id"]
        assert c.put(f"/v1/spaces/{sid}/files/keep.txt", content=b"original\r\n").status_code in (200, 201)
        assert c.put(f"/v1/spaces/{sid}/files/gone.txt", content=b"bye").status_code in (200, 201)
        run = c.post(f"/v1/spaces/{sid}/runs", json={"protocolVersion": "1.0", "operations": [
            {"type": "shell", "command": "sed -i 's/original/edited/' keep.txt && rm gone.txt"},
            {"type": "shell", "command": "mkdir -p out && echo built > out/a.o && chmod 755 keep.txt"}]}).json()
        assert run["status"] == "completed", run
        rid = run["runId"]

        preview = c.post(f"/v1/runs/{rid}/rewind", json={"dryRun": True}).json()
        assert preview["dryRun"] is True
        assert {(x["path"], x["action"]) for x in preview["changes"]} == {
            ("keep.txt", "modify"), ("gone.txt", "create"), ("out/a.o", "delete")}
        assert c.get(f"/v1/spaces/{sid}/files/out/a.o").status_code == 200  # nothing changed

        assert c.put(f"/v1/spaces/{sid}/files/later.txt", content=b"someone else").status_code in (200, 201)
        refused = c.post(f"/v1/runs/{rid}/rewind")
        assert refused.status_code == 409 and "later.txt" in refused.json()["error"]["message"]
        assert c.delete(f"/v1/spaces/{sid}/files/later.txt").status_code in (200, 204)

        done = c.post(f"/v1/runs/{rid}/rewind", json={}).json()
        assert {x["path"] for x in done["changes"]} == {"keep.txt", "gone.txt", "out/a.o"}
        assert c.get(f"/v1/spaces/{sid}/files/keep.txt").content == b"original\r\n"
        assert c.get(f"/v1/spaces/{sid}/files/gone.txt").content == b"bye"
        assert c.get(f"/v1/spaces/{sid}/files/out/a.o").status_code == 404
        bad = c.post(f"/v1/runs/{rid}/rewind", json={"dryRun": "yes"})
        assert bad.status_code == 400 and "dryRun" in bad.json()["error"]["message"]


def test_writes_through_a_linked_directory_are_put_back_with_the_rest_of_the_run(server: ServerProcess) -> None:
    # After a call that names its paths only those are taken again (no scan of the tree): a
    # write through a linked directory changes the link's target, which must be taken too, or
    # the rewind would call the run's own file a change made outside it.
    key = server.create_key("rw-link")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        sid = c.post("/v1/spaces", json={"name": "rw", "policy": {"preset": "permissive"}}).json()["id"]
        assert c.put(f"/v1/spaces/{sid}/files/real/old.txt", content=b"old\n").status_code in (200, 201)
        run = c.post(f"/v1/spaces/{sid}/runs", json={"protocolVersion": "1.0", "operations": [
            {"type": "shell", "command": "ln -s real link"},
            {"type": "createFile", "path": "link/new.txt", "content": "new\n"},
            {"type": "createFile", "path": "link/old.txt", "content": "changed\n", "overwrite": True},
            {"type": "createFile", "path": "top.txt", "content": "top\n"}]}).json()
        assert run["status"] == "completed", run
        assert c.get(f"/v1/spaces/{sid}/files/real/new.txt").content == b"new\n"

        done = c.post(f"/v1/runs/{run['runId']}/rewind", json={})
        assert done.status_code == 200, done.text
        assert {x["path"] for x in done.json()["changes"]} == {"link", "real/new.txt", "real/old.txt", "top.txt"}
        assert c.get(f"/v1/spaces/{sid}/files/real/new.txt").status_code == 404
        assert c.get(f"/v1/spaces/{sid}/files/real/old.txt").content == b"old\n"
        assert c.get(f"/v1/spaces/{sid}/files/top.txt").status_code == 404

        # The rewind is taken back, once; a second redo has nothing to take back.
        preview = c.post(f"/v1/runs/{run['runId']}/redo", json={"dryRun": True}).json()
        assert preview["dryRun"] is True and c.get(f"/v1/spaces/{sid}/files/top.txt").status_code == 404
        redone = c.post(f"/v1/runs/{run['runId']}/redo", json={})
        assert redone.status_code == 200, redone.text
        assert {x["path"] for x in redone.json()["changes"]} == {"link", "real/new.txt", "real/old.txt", "top.txt"}
        assert c.get(f"/v1/spaces/{sid}/files/real/old.txt").content == b"changed\n"
        assert c.get(f"/v1/spaces/{sid}/files/link/new.txt").content == b"new\n"
        again = c.post(f"/v1/runs/{run['runId']}/redo", json={})
        assert again.status_code == 409 and again.json()["error"]["code"] == "redo_refused"
        assert "no rewind to redo" in again.json()["error"]["message"]


def test_the_runs_of_a_space_share_one_snapshot_index(server: ServerProcess) -> None:
    # An index per run would pile up in codeloop's repository, one file per run, forever.
    from codeloop.sessions.snapshots import workspace_key

    key = server.create_key("rw-index")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        sid = c.post("/v1/spaces", json={"name": "rw", "policy": {"preset": "permissive"}}).json()["id"]
        runs = []
        for n in range(3):
            run = c.post(f"/v1/spaces/{sid}/runs", json={"protocolVersion": "1.0", "operations": [
                {"type": "createFile", "path": f"f{n}.txt", "content": f"{n}\n"}]}).json()
            assert run["status"] == "completed", run
            runs.append(run["runId"])
        refused = c.post(f"/v1/runs/{runs[1]}/rewind", json={})  # the run after it made f2.txt
        assert refused.status_code == 409 and "f2.txt" in refused.json()["error"]["message"]
        assert c.post(f"/v1/runs/{runs[2]}/rewind", json={}).status_code == 200
        assert c.get(f"/v1/spaces/{sid}/files/f2.txt").status_code == 404
        assert c.get(f"/v1/spaces/{sid}/files/f1.txt").content == b"1\n"
    repository = server.state_dir / "snapshots" / f"{workspace_key(server.data_dir / 'workspaces' / sid)}.git"
    assert sorted(p.name for p in repository.glob("index*")) == ["index-units"]


def test_a_space_with_undo_off_is_not_snapshotted_and_its_runs_refuse_a_rewind(server: ServerProcess) -> None:
    # undo.enabled false trades the rewind for speed: no snapshot is taken, and a rewind of
    # such a run refuses, naming what ran, rather than answer "nothing to restore".
    key = server.create_key("rw-off")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        sid = c.post("/v1/spaces", json={"policy": {"preset": "permissive", "undo": {"enabled": False}}}).json()["id"]
        snapshots = server.state_dir / "snapshots"  # type: ignore[attr-defined]
        before = set(snapshots.iterdir()) if snapshots.exists() else set()
        run = c.post(f"/v1/spaces/{sid}/runs", json={"protocolVersion": "1.0", "operations": [
            {"type": "readFile", "path": "nothing.txt"},
            {"type": "createFile", "path": "made.txt", "content": "new\n"},
            {"type": "shell", "command": "echo more >> made.txt"}]}).json()
        assert run["events"][1]["success"] is True and run["events"][2]["exitCode"] == 0, run
        refused = c.post(f"/v1/runs/{run['runId']}/rewind", json={})
        assert refused.status_code == 409, refused.text
        message = refused.json()["error"]["message"]
        assert "createFile" in message and "echo more >> made.txt" in message and "undo was off" in message
        assert "readFile" not in message  # a read changes nothing
        assert c.get(f"/v1/spaces/{sid}/files/made.txt").content == b"new\nmore\n"  # nothing restored
        new_repos = (set(snapshots.iterdir()) if snapshots.exists() else set()) - before
        assert new_repos == set()  # no snapshot repository was made for its workspace

        bad = c.post("/v1/spaces", json={"policy": {"undo": {"enabled": "no"}}})
        assert bad.status_code == 400 and "undo" in bad.json()["error"]["message"]
