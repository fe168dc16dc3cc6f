"""``codeloop batch --ray`` on a real local Ray cluster: a head node and a second node, each with
its own directories, 20 tasks against the loopback model, the second node killed midway.

One cluster for the module (``ray start`` takes seconds per node). Node deaths are noticed
within a couple of seconds (the health-check settings of ``RAY_ENV``), not Ray's default 15 s.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from batch_helpers import batch_argv, batch_env, log_kinds, result_lines, simple_tasks, write_tasks
from task_model import TaskModel

pytest.importorskip("ray", reason="the Ray tests need the ray extra: pip install 'codeloop[ray]'")

RAY = str(Path(sys.executable).parent / "ray")
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_health_check_period_ms": "500",
           "RAY_health_check_timeout_ms": "1000", "RAY_health_check_failure_threshold": "3"}


@dataclass
class Cluster:
    address: str
    head_dir: Path
    """The head node's CODELOOP_BATCH_WORK_DIR."""
    node_dir: Path
    """The second node's."""
    node_session: int
    """Session of the second node's processes (raylet, workers)."""
    seconds: dict[str, float]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ray_start(args: list[str], temp: Path, work: Path) -> tuple[int, float]:
    """``ray start ARGS`` in a session of its own (its daemons and workers stay in it): (session, seconds)."""
    started = time.monotonic()
    env = {**os.environ, **RAY_ENV, "CODELOOP_BATCH_WORK_DIR": str(work)}
    proc = subprocess.Popen([RAY, "start", *args, "--temp-dir", str(temp), "--disable-usage-stats"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, out
    return proc.pid, time.monotonic() - started


def _kill_session(session: int) -> None:
    """SIGKILL every process of the session ``ray start`` began: the node's daemons and its
    workers (each worker has a process group of its own, in the same session)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == session:  # fields after the name: state, ppid, pgrp, session
                os.kill(int(stat.parent.name), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    # Short paths: Ray's unix sockets live under the temp dir and must fit in 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="clray-", dir="/tmp"))
    port = _free_port()
    sessions = []
    try:
        head, head_s = _ray_start(["--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "3",
                                   "--include-dashboard", "false"], root / "t1", root / "d1")
        sessions.append(head)
        node, node_s = _ray_start(["--address", f"127.0.0.1:{port}", "--node-ip-address", "127.0.0.1",
                                   "--num-cpus", "1"], root / "t2", root / "d2")
        sessions.append(node)
        print(f"ray start: head {head_s:.1f} s, second node {node_s:.1f} s")
        yield Cluster(f"127.0.0.1:{port}", root / "d1", root / "d2", node, {"head": head_s, "node": node_s})
    finally:
        for session in sessions:
            _kill_session(session)
        shutil.rmtree(root, ignore_errors=True)


def _running_on(node_dir: Path, mirror: Path) -> list[str]:
    """Tasks the node runs now whose log the batch's keeper already holds a part of."""
    if not node_dir.is_dir():
        return []
    running = []
    for task in (task for batch in node_dir.iterdir() for task in batch.iterdir()):  # <node>/<batch>/<id>
        own = next((task / "state" / "sessions").glob("*.jsonl"), None) if (task / "state").is_dir() else None
        kept = next((mirror / task.name).glob("*.jsonl"), None) if (mirror / task.name).is_dir() else None
        if own is not None and kept is not None and "session_end" not in log_kinds(own) \
                and "user_input" in log_kinds(kept):
            running.append(task.name)
    return running


def test_a_lost_node_loses_no_task_and_records_none_twice(cluster: Cluster, tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", simple_tasks(20, prefix="r"))
    mirror = tmp_path / "tasks.results.logs"
    with TaskModel(delay=0.25) as slow:
        batch = subprocess.Popen(batch_argv(tasks, slow, "--ray", cluster.address, "--json"), stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, env={**batch_env(tmp_path), **RAY_ENV})
        deadline = time.monotonic() + 120
        while not (cut := _running_on(cluster.node_dir, mirror)) and time.monotonic() < deadline:
            assert batch.poll() is None, "the batch ended before anything ran on the second node"
            time.sleep(0.05)
        assert cut, "no task ran on the second node"
        kept = {name: next((mirror / name).glob("*.jsonl")).read_bytes() for name in cut}
        _kill_session(cluster.node_session)
        out, _ = batch.communicate(timeout=180)
    assert batch.returncode == 0, out
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1]["event"] == "batch_finished" and events[-1]["lost"] == []
    lines = result_lines(tmp_path / "tasks.results.jsonl")
    assert sorted(line["id"] for line in lines) == sorted(f"r{i}" for i in range(20))
    assert all(line["status"] == "completed" and line["check"]["passed"] for line in lines), [
        (line["id"], line["status"], line["error"], line["check"]) for line in lines if not (line["check"] or {}).get("passed")]
    on = {line["id"]: Path(line["workspace"]).parents[2] for line in lines}
    assert set(on.values()) <= {cluster.head_dir, cluster.node_dir}
    assert cluster.head_dir in on.values()
    for name in cut:  # went on from the keeper's copy of its log, on the head node
        assert on[name] == cluster.head_dir
        log = next(line["session_log"] for line in lines if line["id"] == name)
        assert Path(log).read_bytes().startswith(kept[name])
        assert log_kinds(log).count("user_input") == 1 and log_kinds(log).count("session_start") > 1

    # Another batch on the same cluster with the same ids (another results file) runs its own
    # tasks: a node's work directory is per batch, so the first batch's results are not taken.
    again = tmp_path / "again"
    again.mkdir()
    other = write_tasks(again / "tasks.jsonl", simple_tasks(2, prefix="r", check="test -f never-made.txt"))
    with TaskModel() as model:
        done = subprocess.run(batch_argv(other, model, "--ray", cluster.address, "--json"), capture_output=True,
                              text=True, timeout=180, env={**batch_env(again), **RAY_ENV})
    assert done.returncode == 0, done.stderr[-2000:]
    second = result_lines(again / "tasks.results.jsonl")
    assert sorted(line["id"] for line in second) == ["r0", "r1"]
    assert all(line["check"] is not None and not line["check"]["passed"] for line in second), second
    assert not {line["workspace"] for line in second} & {line["workspace"] for line in lines}
