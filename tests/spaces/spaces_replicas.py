"""Issue 40's test of spaces on two replicas, any size (CI: tests/spaces/test_replicas.py; the
200-run version and the throughput/takeover figures: benchmarks/spaces_replicas.py).

Two real ``codeloop spaces serve`` processes (*replicas*) share one PostgreSQL store and one
data directory. ``clients`` client threads each send ``runs`` runs one after the other, the
*n*-th to replica ``(client + n) % 2`` (to the other one when it cannot connect); two
clients share each space, so runs of one space arrive at both replicas at once. Each operation
is ``shell`` ``sleep 0.1; echo <mark> >> log.txt`` (``<mark>`` = ``c<client>r<run>o<op>``). One
watcher thread per space follows every run of its space over SSE from one replica, and on a
failed connection from the other, with ``Last-Event-ID`` set to the last id it saw.

Once a third of the runs are done, replica A is SIGKILLed and restarted; once two thirds are
done, replica B is SIGSTOPped for 2.5 lease lengths (so A takes its runs over) and then
SIGCONTed. Then the check, reading the runs' messages from the database and everything else
through the API and the workspaces:

- every run is ``completed`` (a run cut by the kill or the pause goes on at the replica that
  took it over) or ``error`` reported interrupted; none is left ``running``;
- *duplicated*: a mark twice in a log (an operation executed twice);
- *lost*: an operation with a successful event whose mark is missing;
- *interrupted*: an operation reported interrupted by a takeover (its mark may be present:
  it ran on the replica that died or paused; never twice);
- *lost events*: an event a watcher or a client received that the run's replayed stream does not
  hold with the same id and content, and, for a run a watcher followed to its end, any event of
  the replay the watcher did not receive;
- *problems*: anything else (a mark without an event, a failed operation, a replay with gaps).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from kill_campaign_common import read_text

from .server_process import ServerProcess
from .spaces_kill_campaign import OP_INTERRUPTED, Received, read_sse

STARTUP_S = 300
TIMEOUT = httpx.Timeout(30, read=300)
"""Generous: a request to the paused replica waits for it; slowness is not a finding."""


def replicas(data_dir: Path, database: str, lease_s: float, *extra: str) -> list[ServerProcess]:
    """Two replicas (not started) on one store and one data directory."""
    return [ServerProcess(data_dir, "--no-auth", "--database", database, "--lease-seconds", str(lease_s), *extra)
            for _ in range(2)]


def operations(client: int, run: int, ops: int) -> list[dict[str, Any]]:
    return [{"type": "shell", "id": f"c{client}r{run}o{i}", "command": f"sleep 0.1; echo c{client}r{run}o{i} >> log.txt"}
            for i in range(ops)]


@dataclass
class Report:
    """What one campaign found."""

    runs: int = 0
    completed_runs: int = 0
    interrupted_runs: int = 0
    completed_ops: int = 0
    taken_over: int = 0
    """Runs whose lease was taken by another replica at least once (from the database)."""
    lost_leases: int = 0
    """Answers of the paused replica saying it lost the run (status ``running``, another goes on)."""
    client_errors: int = 0
    """Requests cut by the kill after they were sent (the run may exist: the watcher follows it)."""
    events_received: int = 0
    duplicated: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    interrupted_mark_present: list[str] = field(default_factory=list)
    lost_events: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return (f"runs={self.runs} (completed {self.completed_runs}, interrupted {self.interrupted_runs}, "
                f"taken over {self.taken_over}, lost-lease answers {self.lost_leases}) ops={self.completed_ops} "
                f"client_errors={self.client_errors} events_received={self.events_received} "
                f"interrupted={len(self.interrupted)} (mark present {len(self.interrupted_mark_present)}) "
                f"duplicated={self.duplicated} lost={self.lost} lost_events={self.lost_events[:10]} "
                f"problems={self.problems[:10]} in {self.seconds:.1f} s")


class Campaign:
    """The client side: client threads, watcher threads, and what they received."""

    def __init__(self, servers: list[ServerProcess], clients: int, runs: int, ops: int) -> None:
        self.servers, self.clients, self.runs, self.ops = servers, clients, runs, ops
        self.received = Received()
        self.followed_to_end: set[str] = set()
        self.done_runs = 0
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.report = Report()
        self.space_ids: list[str] = []

    def url(self, n: int) -> str:
        return self.servers[n % 2].url

    def client(self, c: int) -> None:
        space = self.space_ids[c // 2]
        for r in range(self.runs):
            body = {"protocolVersion": "1.0", "operations": operations(c, r, self.ops)}
            for target in range(c + r, c + r + 20):
                try:
                    with httpx.Client(base_url=self.url(target), timeout=TIMEOUT) as http:
                        answer = http.post(f"/v1/spaces/{space}/runs", json=body)
                    answer.raise_for_status()
                    if answer.json()["status"] == "running":  # the replica lost the run's lease while paused
                        with self.lock:
                            self.report.lost_leases += 1
                    break
                except httpx.ConnectError:
                    time.sleep(0.05)  # that replica is down, nothing was sent: send to the other one
                except httpx.HTTPError:
                    with self.lock:  # cut by the kill: the run may exist (the watcher follows it) or not
                        self.report.client_errors += 1
                    break
            with self.lock:
                self.done_runs += 1

    def watch(self, s: int) -> None:
        """Follow every run of space ``s`` over SSE, switching replicas when one fails."""
        space = self.space_ids[s]
        n = s
        while not self.finished.is_set():
            try:
                with httpx.Client(base_url=self.url(n), timeout=httpx.Timeout(5, read=300)) as http:
                    listing = http.get(f"/v1/spaces/{space}/runs")
                    listing.raise_for_status()
                    for run in listing.json()["runs"]:
                        run_id = run["runId"]
                        if run_id in self.followed_to_end:
                            continue
                        _, state = read_sse(http, run_id, self.received.last(run_id), self.received)
                        if state is not None and state != "running":
                            self.followed_to_end.add(run_id)
            except httpx.HTTPError:
                n += 1  # that replica is down: go on from the other with Last-Event-ID
            time.sleep(0.01)


def _signal(server: ServerProcess, sig: int) -> None:
    assert server.proc is not None
    os.kill(server.proc.pid, sig)


def _wait_for(condition: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


def run_replicas(data_dir: Path, database: str, *, clients: int = 4, runs: int = 8, ops: int = 3,
                 lease_s: float = 1.5, progress: bool = False) -> Report:
    """The whole campaign (see the module docstring) on a fresh ``database``; its report."""
    started = time.monotonic()
    servers = replicas(data_dir, database, lease_s)
    for server in servers:
        server.start(STARTUP_S)
    campaign = Campaign(servers, clients, runs, ops)
    report = campaign.report
    try:
        with httpx.Client(base_url=servers[0].url, timeout=TIMEOUT) as http:
            for _ in range((clients + 1) // 2):
                made = http.post("/v1/spaces", json={"name": "replicas"})
                made.raise_for_status()
                campaign.space_ids.append(made.json()["id"])
        threads = [threading.Thread(target=campaign.client, args=(c,)) for c in range(clients)]
        watchers = [threading.Thread(target=campaign.watch, args=(s,), daemon=True)
                    for s in range(len(campaign.space_ids))]
        for t in threads + watchers:
            t.start()
        total = clients * runs
        _wait_for(lambda: campaign.done_runs >= total // 3, 600)
        _signal(servers[0], signal.SIGKILL)
        servers[0].proc.wait(30)  # type: ignore[union-attr]
        servers[0].proc = None
        if progress:
            print(f"SIGKILLed replica A after {campaign.done_runs} of {total} runs", flush=True)
        servers[0].start(STARTUP_S)
        _wait_for(lambda: campaign.done_runs >= 2 * total // 3, 600)
        _signal(servers[1], signal.SIGSTOP)
        time.sleep(2.5 * lease_s)  # past its lease: replica A takes its runs over
        _signal(servers[1], signal.SIGCONT)
        if progress:
            print(f"SIGSTOPped replica B for {2.5 * lease_s:.1f} s after {campaign.done_runs} runs", flush=True)
        for t in threads:
            t.join(600)
        _settle(campaign, servers[0].url)
        campaign.finished.set()
        for t in watchers:
            t.join(10)
        check(campaign, data_dir, database)
    finally:
        campaign.finished.set()
        for server in servers:
            if server.proc is not None:
                with_suppressed_sigcont(server)
                server.stop()
    report.seconds = time.monotonic() - started
    return report


def with_suppressed_sigcont(server: ServerProcess) -> None:
    """A replica left stopped by a failed campaign cannot stop: continue it first."""
    try:
        _signal(server, signal.SIGCONT)
    except (AssertionError, ProcessLookupError):
        pass


def _settle(campaign: Campaign, url: str) -> None:
    """Wait until no run of the campaign is ``running`` (runs taken over may still go on)."""
    def still_running() -> bool:
        with httpx.Client(base_url=url, timeout=TIMEOUT) as http:
            return any(run["state"] == "running" for space in campaign.space_ids
                       for run in http.get(f"/v1/spaces/{space}/runs").json()["runs"])
    _wait_for(lambda: not still_running(), 600)


def check(campaign: Campaign, data_dir: Path, database: str) -> None:
    """Compare the logs, the replayed streams, what was received and the database (the docstring)."""
    import psycopg

    report = campaign.report
    report.problems += campaign.received.conflicts
    report.events_received = campaign.received.count()
    with psycopg.connect(database) as conn:
        messages = {r[0]: json.loads(r[1]) for r in conn.execute("SELECT id, message FROM runs").fetchall()}
        # No run here waits for approval, so a token past 1 is a takeover.
        report.taken_over = int(conn.execute("SELECT COUNT(*) FROM run_leases WHERE token > 1").fetchone()[0])
    marks: Counter[str] = Counter()
    for space in campaign.space_ids:
        for line in read_text(data_dir / "workspaces" / space / "log.txt").splitlines():
            marks[line] += 1
    with httpx.Client(base_url=campaign.servers[0].url, timeout=TIMEOUT) as http:
        for space in campaign.space_ids:
            for run in http.get(f"/v1/spaces/{space}/runs").json()["runs"]:
                report.runs += 1
                run_id = run["runId"]
                replay, state = read_sse(http, run_id, 0, None)
                _check_run(report, run_id, replay, state, messages[run_id]["operations"], marks, campaign)
    for mark, n in marks.items():
        report.problems.append(f"mark {mark!r} x{n} of no run")


def _check_run(report: Report, run_id: str, replay: list[tuple[int, dict[str, Any]]], state: str | None,
               ops: list[dict[str, Any]], marks: Counter[str], campaign: Campaign) -> None:
    ids = [seq for seq, _ in replay]
    if ids != list(range(1, len(ids) + 1)):
        report.problems.append(f"{run_id}: replayed ids {ids}")
    stream = dict(replay)
    got = campaign.received.events.get(run_id, {})
    for seq, event in sorted(got.items()):
        if stream.get(seq) != event:
            report.lost_events.append(f"{run_id}#{seq} received, not replayed as such")
    if run_id in campaign.followed_to_end:
        report.lost_events += [f"{run_id}#{seq} never reached its watcher" for seq in ids if seq not in got]
    events = [e for _, e in replay]
    if state == "completed":
        report.completed_runs += 1
    elif state == "error" and events and "interrupted" in str(events[-1].get("message")):
        report.interrupted_runs += 1
    else:
        report.problems.append(f"{run_id}: ended {state} (last event {events[-1] if events else None})")
    results = {e.get("operationId"): e for e in events}
    for op in ops:
        mark = op["id"]
        present = marks.pop(mark, 0)
        if present > 1:
            report.duplicated.append(f"{mark} x{present}")
        event = results.get(mark)
        if event is not None and OP_INTERRUPTED in str(event.get("message")):
            report.interrupted.append(mark)
            if present:
                report.interrupted_mark_present.append(mark)
        elif event is not None and event.get("success") is True:
            report.completed_ops += 1
            if not present:
                report.lost.append(mark)
        elif event is not None:
            report.problems.append(f"{mark} failed: {event}")
        elif present:
            report.problems.append(f"{mark} ran without an event (run {state})")
        elif state == "completed":
            report.problems.append(f"{mark} of a completed run has no event")
