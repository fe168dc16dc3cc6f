"""The SIGKILL campaign of issue 23 for ``codeloop spaces serve`` (SQLite or PostgreSQL store).

One *trial*: a new space on a running server (a real ``codeloop spaces serve`` process); a
client thread sends ``runs`` runs one after the other, each of operations that leave a unique
mark: ``createFile files/<op>.txt``, ``shell`` ``sleep 0.02; echo <op> >> log.txt``, and
``shell`` ``echo <op> >> approved.txt``, which the space's policy makes ask for approval; the
client approves each one through the API (``POST /v1/runs/{id}/resume``). A watcher thread
follows every run of the space over SSE (``GET /v1/runs/{id}/events``, ``Last-Event-ID``) as
it executes. Every event either thread receives is recorded with its sequence number (the SSE
``id``; for an HTTP answer, its place after the events the run already had).

The server is SIGKILLed once the client side has received a random number of events, plus a
random 0-50 ms, so the kill lands while a run executes, while an approval is pending, or
while a resume is in flight. The server is restarted on the same store and data directory;
the client reconnects as the protocol allows: it lists the space's runs (a run whose
``POST`` answer was lost is found there), follows each with ``Last-Event-ID`` set to the last
id it saw, repeats a resume whose answer was lost (it must run nothing twice: 409 or the
operation once), approves what still awaits approval (or, when that approval was stored before
the kill and the run not yet gone on, resumes it with an empty body), sends every approval it ever sent
once more (each must answer 409 and run nothing), then replays each run from the start.
The trial checks:

- every run ends ``completed`` (a run cut by the kill is taken over by the restarted server and
  goes on after the operation it cut, which gets an *interrupted* event), or ``error`` with the
  older *interrupted* event (``the server stopped while this run was running``); never left
  ``running``;
- *lost events*: an event received before the kill that the replayed stream does not hold
  with the same id and content (ids must be 1..n in order);
- *lost effects*: an operation with a successful event whose mark is missing;
- *duplicated*: a mark present twice (an approved operation run twice, a command re-run);
- *interrupted*: the operation the kill cut (reported interrupted, or, in an older run, the one
  at which it stopped without a result event; it may have run before the kill or not: counted
  apart, with whether its mark is present);
- *inconsistent*: a mark without an event (other than the interrupted operation), an
  operation that ran although it still awaits approval, unexpected text, a run still running.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from kill_campaign_common import Outcome, read_text, sum_trials

from .server_process import ServerProcess

POLICY = {"preset": "standard", "shell": {"approvalRequiredPatterns": [r"approved\.txt"]}}
KINDS = ("create", "shell", "approve")
INTERRUPTED = "the server stopped while this run was running"
OP_INTERRUPTED = "was interrupted: the server running it stopped"
"""An operation cut by the kill, reported by the server that took its run over (issue 40)."""
STARTUP_S = 300
"""How long a (re)start may take: the campaigns run on loaded machines; slowness is not a finding."""
MARK = re.compile(r"^r\d+o\d+$")


def operations(run: int, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """The operations of run ``run``: one per kind, each leaving the mark ``r<run>o<index>``."""
    ops: list[dict[str, Any]] = []
    for i, kind in enumerate(kinds):
        mark = f"r{run}o{i}"
        if kind == "create":
            ops.append({"type": "createFile", "id": mark, "path": f"files/{mark}.txt", "content": f"{mark}\n"})
        elif kind == "shell":
            ops.append({"type": "shell", "id": mark, "command": f"sleep 0.02; echo {mark} >> log.txt"})
        else:
            ops.append({"type": "shell", "id": mark, "command": f"echo {mark} >> approved.txt"})
    return ops


def run_kinds(rng: random.Random, size: int) -> tuple[str, ...]:
    """A random mix of ``size`` operations with at least one approval."""
    kinds = [rng.choice(KINDS) for _ in range(size - 1)]
    kinds.insert(rng.randrange(size), "approve")
    return tuple(kinds)


class Received:
    """Every event the client side was sent, by run and sequence number (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: dict[str, dict[int, dict[str, Any]]] = {}
        self.conflicts: list[str] = []

    def add(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
        with self._lock:
            known = self.events.setdefault(run_id, {})
            if seq in known and known[seq] != event:
                self.conflicts.append(f"{run_id} event {seq} received as {known[seq]} and as {event}")
            known[seq] = event

    def last(self, run_id: str) -> int:
        with self._lock:
            return max(self.events.get(run_id, {}), default=0)

    def count(self) -> int:
        with self._lock:
            return sum(len(e) for e in self.events.values())


def read_sse(http: httpx.Client, run_id: str, after: int, sink: Received | None,
             stop: threading.Event | None = None) -> tuple[list[tuple[int, dict[str, Any]]], str | None]:
    """Follow a run's SSE stream from ``after`` to its ``end``: the ``(id, event)`` pairs read (also
    added to ``sink`` as they arrive) and the final state (``None`` when ``stop`` cut it)."""
    headers = {"Last-Event-ID": str(after)} if after else {}
    got: list[tuple[int, dict[str, Any]]] = []
    with http.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as response:
        response.raise_for_status()
        block: dict[str, str] = {}
        for line in response.iter_lines():
            if stop is not None and stop.is_set():
                return got, None
            if line:
                name, _, value = line.partition(":")
                block[name] = value.strip()
                continue
            if block.get("event") == "end":
                return got, str(json.loads(block["data"])["state"])
            if "id" in block:
                seq, event = int(block["id"]), json.loads(block["data"])
                got.append((seq, event))
                if sink is not None:
                    sink.add(run_id, seq, event)
            block = {}
    return got, None


@dataclass
class Trial(Outcome):
    """What one trial found."""

    killed: bool = False
    """The SIGKILL landed before the client had finished its runs."""
    kill_after_events: int = 0
    events_at_kill: int = 0
    runs: int = 0
    completed_runs: int = 0
    interrupted_runs: int = 0
    completed_ops: int = 0
    pending_at_kill: int = 0
    """Approvals the client had been asked for and not yet answered when the kill came."""
    resumes_in_flight: int = 0
    """Approvals sent whose answer the kill cut (each sent again after the restart)."""
    approved_ops: int = 0
    lost_events: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"killed={self.killed} after {self.events_at_kill} events; runs={self.runs} "
                f"(completed {self.completed_runs}, interrupted {self.interrupted_runs}) "
                f"ops={self.completed_ops} approved={self.approved_ops} pending_at_kill={self.pending_at_kill} "
                f"resumes_in_flight={self.resumes_in_flight} interrupted={self.interrupted} "
                f"(mark present: {self.interrupted_mark_present}) lost_events={self.lost_events} lost={self.lost} "
                f"duplicated={self.duplicated} problems={self.problems}")


class Client:
    """The client side of a trial: the run thread and the SSE watcher thread."""

    def __init__(self, url: str, space_id: str, plan: list[tuple[str, ...]], approval_delay: float) -> None:
        self.url, self.space_id, self.plan = url, space_id, plan
        self.approval_delay = approval_delay
        """How long the client takes to approve (so kills also land while an approval is pending)."""
        self.received = Received()
        self.stop = threading.Event()
        self.done = threading.Event()
        self.in_flight_resume: dict[str, str] = {}
        """Run id -> operation id of a resume sent whose answer has not arrived."""
        self.pending: dict[str, str] = {}
        """Run id -> operation id awaiting approval (as last seen)."""
        self.approvals_sent: list[tuple[str, str]] = []
        """Every ``(run id, operation id)`` approved, in order (replayed after the restart)."""
        self.errors: list[str] = []

    def _http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=httpx.Timeout(30, read=60))

    def record(self, run_id: str, base: int, events: list[dict[str, Any]]) -> None:
        for n, event in enumerate(events, start=base + 1):
            self.received.add(run_id, n, event)

    def drive(self) -> None:
        """Send the runs and approve every pending operation, until done or the server dies."""
        try:
            with self._http() as http:
                for r, kinds in enumerate(self.plan):
                    body = {"protocolVersion": "1.0", "operations": operations(r, kinds)}
                    answer = http.post(f"/v1/spaces/{self.space_id}/runs", json=body)
                    answer.raise_for_status()
                    msg = answer.json()
                    run_id = msg["runId"]
                    self.record(run_id, 0, msg["events"])
                    while msg["status"] == "awaiting_approval":
                        op_id = msg["events"][-1]["operationId"]
                        self.pending[run_id] = op_id
                        time.sleep(self.approval_delay)
                        base = self.received.last(run_id)
                        self.in_flight_resume[run_id] = op_id
                        self.approvals_sent.append((run_id, op_id))
                        answer = http.post(f"/v1/runs/{run_id}/resume",
                                           json={"approval": {"operationId": op_id, "decision": "approved"}})
                        answer.raise_for_status()
                        msg = answer.json()
                        del self.in_flight_resume[run_id]
                        self.pending.pop(run_id, None)
                        self.record(run_id, base, msg["events"])
        except httpx.HTTPError as exc:
            if not self.stop.is_set():
                self.errors.append(f"client: {exc!r}")
        finally:
            self.done.set()

    def watch(self) -> None:
        """Follow every run of the space over SSE while the client drives them."""
        try:
            with self._http() as http:
                while not self.stop.is_set() and not self.done.is_set():
                    listing = http.get(f"/v1/spaces/{self.space_id}/runs")
                    listing.raise_for_status()
                    for run in listing.json()["runs"]:
                        if run["state"] == "running" or self.received.last(run["runId"]) == 0:
                            read_sse(http, run["runId"], self.received.last(run["runId"]), self.received, self.stop)
                    time.sleep(0.005)
        except httpx.HTTPError as exc:
            if not self.stop.is_set():
                self.errors.append(f"watcher: {exc!r}")


def kill(server: ServerProcess) -> None:
    """SIGKILL the server process (the process alone, as ``kill -9`` does)."""
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(timeout=30)
    server.proc = None


def run_trial(server: ServerProcess, rng: random.Random, *, runs: int, ops_per_run: int) -> Trial:
    """One trial on the running ``server`` (killed and restarted once; left running)."""
    plan = [run_kinds(rng, ops_per_run) for _ in range(runs)]
    # An unkilled trial receives one event per operation plus one per approval asked for.
    events = sum(len(kinds) + kinds.count("approve") for kinds in plan)
    trial = Trial(kill_after_events=rng.randint(1, events - 1))
    jitter = rng.uniform(0, 0.05)
    with httpx.Client(base_url=server.url, timeout=httpx.Timeout(30, read=60)) as http:
        space = http.post("/v1/spaces", json={"name": "kill", "policy": POLICY})
        space.raise_for_status()
        space_id = space.json()["id"]
    client = Client(server.url, space_id, plan, rng.uniform(0, 0.05))
    threads = [threading.Thread(target=client.drive), threading.Thread(target=client.watch)]
    for t in threads:
        t.start()
    while not client.done.is_set() and client.received.count() < trial.kill_after_events:
        time.sleep(0.001)
    time.sleep(jitter)
    trial.killed = not client.done.is_set()
    client.stop.set()
    trial.events_at_kill = client.received.count()
    trial.pending_at_kill = len(client.pending) - len(client.in_flight_resume)
    trial.resumes_in_flight = len(client.in_flight_resume)
    kill(server)
    for t in threads:
        t.join(timeout=120)
    server.start(STARTUP_S)
    trial.problems += client.errors
    reconnect(server, client, trial)
    check(server, client, plan, trial)
    return trial


def reconnect(server: ServerProcess, client: Client, trial: Trial) -> None:
    """After the restart: follow each run from the last id seen, repeat the resumes whose answer
    was lost, approve what still waits (see the module docstring)."""
    received = client.received
    with httpx.Client(base_url=server.url, timeout=httpx.Timeout(30, read=10)) as http:
        listing = http.get(f"/v1/spaces/{client.space_id}/runs")
        listing.raise_for_status()
        for run in listing.json()["runs"]:
            run_id = run["runId"]
            try:
                _, state = read_sse(http, run_id, received.last(run_id), received)
            except httpx.ReadTimeout:
                trial.problems.append(f"{run_id}: still running after the restart (its stream never ends)")
                continue
            if run_id in client.in_flight_resume:
                op_id = client.in_flight_resume[run_id]
                answer = http.post(f"/v1/runs/{run_id}/resume",
                                   json={"approval": {"operationId": op_id, "decision": "approved"}})
                if answer.status_code == 200:
                    client.record(run_id, received.last(run_id), answer.json()["events"])
                    state = answer.json()["status"]
                elif answer.status_code != 409:
                    trial.problems.append(f"{run_id}: repeated resume answered {answer.status_code}: {answer.text}")
            while state == "awaiting_approval":
                view = http.get(f"/v1/runs/{run_id}").json()
                base = received.last(run_id)
                answer = http.post(f"/v1/runs/{run_id}/resume", json={
                    "approval": {"operationId": view["pendingOperationId"], "decision": "approved"}})
                if answer.status_code == 409 and answer.json()["error"]["code"] == "already_decided":
                    # Decided before the kill (the lost resume above), not yet run: the run was given
                    # back to awaiting_approval, and a resume with an empty body carries the decision out.
                    answer = http.post(f"/v1/runs/{run_id}/resume", json={})
                answer.raise_for_status()
                client.record(run_id, base, answer.json()["events"])
                state = answer.json()["status"]
        # A client that sends an approval again (a retry, a double click) must not run anything twice.
        for run_id, op_id in client.approvals_sent:
            answer = http.post(f"/v1/runs/{run_id}/resume",
                               json={"approval": {"operationId": op_id, "decision": "approved"}})
            if answer.status_code != 409:
                trial.problems.append(f"{run_id}: approval of {op_id} sent again answered {answer.status_code}")


def check(server: ServerProcess, client: Client, plan: list[tuple[str, ...]], trial: Trial) -> None:
    """Compare what the client received, the replayed streams and the workspace."""
    received = client.received
    trial.problems += received.conflicts
    workspace = server.data_dir / "workspaces" / client.space_id
    marks: Counter[str] = Counter()
    for name in ("log.txt", "approved.txt"):
        text = read_text(workspace / name)
        for line in text.splitlines():
            if MARK.match(line):
                marks[line] += 1
            else:
                trial.problems.append(f"unexpected line in {name}: {line!r}")
    for path in sorted((workspace / "files").glob("*.txt")) if (workspace / "files").is_dir() else []:
        if path.read_text() == f"{path.stem}\n":
            marks[path.stem] += 1
        else:
            trial.problems.append(f"{path.name} holds {path.read_text()!r}")
    with httpx.Client(base_url=server.url, timeout=httpx.Timeout(30, read=10)) as http:
        listing = http.get(f"/v1/spaces/{client.space_id}/runs").json()["runs"]
        if len(listing) > len(plan):
            trial.problems.append(f"{len(listing)} runs for {len(plan)} sent")
        # The client sends its runs one after the other, so the listing (oldest first) is the plan's order.
        for r, run in enumerate(listing[:len(plan)]):
            run_id = run["runId"]
            try:
                replay, state = read_sse(http, run_id, 0, None)
            except httpx.ReadTimeout:
                state, replay = "running", []  # reported by reconnect(); its marks are still counted
            ids = [seq for seq, _ in replay]
            if ids != list(range(1, len(ids) + 1)):
                trial.problems.append(f"{run_id}: replayed ids {ids}")
            stream = dict(replay)
            for seq, event in sorted(received.events.get(run_id, {}).items()):
                if stream.get(seq) != event:
                    trial.lost_events.append(f"{run_id}#{seq}")
            _check_run(run_id, r, len(plan[r]), [e for _, e in replay], state, marks, trial)
    trial.runs = len(listing)
    for mark in marks:
        trial.problems.append(f"mark {mark} of a run that was never created")


def _check_run(run_id: str, r: int, n_ops: int, events: list[dict[str, Any]], state: str | None,
               marks: Counter[str], trial: Trial) -> None:
    results = {e["operationId"]: e for e in events if e.get("operationId") and e["type"] != "approvalRequired"}
    asked = {e["operationId"] for e in events if e["type"] == "approvalRequired"}
    interrupted = state == "error" and bool(events) and INTERRUPTED in str(events[-1].get("message"))
    if state == "completed":
        trial.completed_runs += 1
    elif interrupted:
        trial.interrupted_runs += 1
    else:
        trial.problems.append(f"{run_id}: ended {state} (last event {events[-1] if events else None})")
    cut_at = next((i for i in range(n_ops) if f"r{r}o{i}" not in results), None) if interrupted else None
    for i in range(n_ops):
        op = f"r{r}o{i}"
        present = marks.pop(op, 0)
        if present > 1:
            trial.duplicated.append(op)
        if op in results and OP_INTERRUPTED in str(results[op].get("message")):
            trial.interrupted.append(op)  # cut by the kill; the run went on after it once taken over
            if present:
                trial.interrupted_mark_present.append(op)
        elif op in results:
            if results[op].get("success") is not True:
                trial.problems.append(f"{op} failed: {results[op]}")
                continue
            trial.completed_ops += 1
            trial.approved_ops += op in asked
            if present == 0:
                trial.lost.append(op)
        elif i == cut_at:
            trial.interrupted.append(op)
            if present:
                trial.interrupted_mark_present.append(op)
        elif present:
            trial.problems.append(f"{op} ran without an event" + (" (it awaits approval)" if op in asked else ""))
        elif state == "completed":
            trial.problems.append(f"{op} of a completed run has no event")



@dataclass
class Campaign:
    """Totals over trials."""

    trials: list[Trial] = field(default_factory=list)

    def totals(self) -> dict[str, int]:
        return sum_trials(Trial, self.trials, ("kill_after_events",))


def run_campaign(data_dir: Path, trials: int, *, database: str | None = None, runs: int = 3, ops_per_run: int = 5,
                 seed: int = 23, progress: bool = False) -> Campaign:
    """``trials`` trials against one server on ``database`` (SQLite in ``data_dir`` when None), a
    new space each, kill points drawn from ``seed``."""
    # A short lease: on PostgreSQL the restarted server takes a killed run over once it expires.
    server = ServerProcess(data_dir, "--no-auth", "--lease-seconds", "2",
                           *(["--database", database] if database else []))
    rng = random.Random(seed)
    campaign = Campaign()
    server.start(STARTUP_S)
    try:
        for n in range(trials):
            trial = run_trial(server, rng, runs=runs, ops_per_run=ops_per_run)
            campaign.trials.append(trial)
            if progress:
                print(f"trial {n}: {trial.summary()}", flush=True)
    finally:
        server.stop()
    return campaign
