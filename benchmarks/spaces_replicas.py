"""Spaces on several replicas (issue 40), side by side in one run, on a throw-away PostgreSQL
cluster this script starts (exits 2 with the reason when the server binaries are missing):

1. **campaign**: tests/spaces/spaces_replicas.py at full size (default 20 clients x 10 runs =
   200 runs): two replicas, one SIGKILLed midway and restarted, the other SIGSTOPped past its
   lease and resumed; counts duplicated operations, lost runs and lost events (must be 0);
2. **throughput**: runs per second with 1 and with 2 replicas on this machine, ``--clients``
   clients each sending ``--throughput-runs`` runs (createFile, shell, readFile) to their own
   space, spread round-robin over the replicas;
3. **takeover**: for each lease length, the time from a SIGKILL of the replica executing a run
   to the next event of that run, recorded by the other replica (the lease must expire first).

    PYTHONPATH=src .venv/bin/python benchmarks/spaces_replicas.py [--clients 20] [--runs 10] \
        [--leases 1,2,5] [--skip-campaign]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from spaces.postgres_cluster import PostgresUnavailableError, create_database, postgres_cluster
from spaces.spaces_replicas import STARTUP_S, TIMEOUT, replicas, run_replicas


def throughput(cluster: str, n_replicas: int, clients: int, runs: int) -> float:
    """Runs per second of ``clients`` clients over ``n_replicas`` replicas."""
    with tempfile.TemporaryDirectory(prefix="spaces-replicas-tp-") as tmp:
        servers = replicas(Path(tmp), create_database(cluster), 10.0)[:n_replicas]
        for server in servers:
            server.start(STARTUP_S)
        try:
            spaces = []
            with httpx.Client(base_url=servers[0].url, timeout=TIMEOUT) as http:
                for _ in range(clients):
                    spaces.append(http.post("/v1/spaces", json={"name": "tp"}).json()["id"])
            failures: list[str] = []

            def client(c: int) -> None:
                with httpx.Client(base_url=servers[c % n_replicas].url, timeout=TIMEOUT) as http:
                    for r in range(runs):
                        ops = [{"type": "createFile", "path": f"f{r}.txt", "content": "x\n"},
                               {"type": "shell", "command": f"echo {r} >> log.txt"},
                               {"type": "readFile", "path": f"f{r}.txt"}]
                        answer = http.post(f"/v1/spaces/{spaces[c]}/runs",
                                           json={"protocolVersion": "1.0", "operations": ops})
                        if answer.status_code != 200 or answer.json()["status"] != "completed":
                            failures.append(answer.text[:200])

            threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
            began = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - began
            if failures:
                print(f"  {len(failures)} runs failed, e.g. {failures[0]}")
            return clients * runs / elapsed
        finally:
            for server in servers:
                server.stop()


def takeover(cluster: str, lease_s: float) -> float:
    """Seconds from the SIGKILL of the replica executing a run to the run's next event."""
    with tempfile.TemporaryDirectory(prefix="spaces-replicas-to-") as tmp:
        a, b = replicas(Path(tmp), create_database(cluster), lease_s)
        a.start(STARTUP_S)
        b.start(STARTUP_S)
        try:
            with httpx.Client(base_url=b.url, timeout=TIMEOUT) as http:
                space = http.post("/v1/spaces", json={"name": "to"}).json()["id"]
            ops = [{"type": "shell", "command": f"sleep 0.2; echo {i} >> log.txt"} for i in range(200)]

            def send() -> None:
                with contextlib.suppress(httpx.HTTPError), httpx.Client(base_url=a.url, timeout=TIMEOUT) as http:
                    http.post(f"/v1/spaces/{space}/runs", json={"protocolVersion": "1.0", "operations": ops})

            threading.Thread(target=send, daemon=True).start()
            with httpx.Client(base_url=b.url, timeout=TIMEOUT) as http:
                while not (runs := http.get(f"/v1/spaces/{space}/runs").json()["runs"]) or runs[0]["cursor"] < 3:
                    time.sleep(0.01)
                run_id = runs[0]["runId"]
                assert a.proc is not None
                os.kill(a.proc.pid, signal.SIGKILL)
                killed = time.monotonic()
                seen = len(http.get(f"/v1/runs/{run_id}").json()["events"])
                # B takes the run over once the lease expired (its keeper, or this read, whichever first).
                while len(http.get(f"/v1/runs/{run_id}").json()["events"]) <= seen:
                    time.sleep(0.01)
                return time.monotonic() - killed
        finally:
            a.stop()
            b.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--runs", type=int, default=10, help="runs per client in the campaign")
    parser.add_argument("--ops", type=int, default=3)
    parser.add_argument("--lease", type=float, default=2.0, help="lease length in the campaign (s)")
    parser.add_argument("--throughput-runs", type=int, default=10)
    parser.add_argument("--leases", default="1,2,5", help="lease lengths for the takeover times (s)")
    parser.add_argument("--skip-campaign", action="store_true")
    args = parser.parse_args()
    try:
        cluster_cm = postgres_cluster()
        cluster = cluster_cm.__enter__()
    except PostgresUnavailableError as exc:
        print(f"skipped: {exc}")
        return 2
    bad = False
    try:
        if not args.skip_campaign:
            with tempfile.TemporaryDirectory(prefix="spaces-replicas-") as tmp:
                report = run_replicas(Path(tmp) / "data", create_database(cluster), clients=args.clients,
                                      runs=args.runs, ops=args.ops, lease_s=args.lease, progress=True)
            print(f"campaign: {args.clients} clients x {args.runs} runs x {args.ops} ops, lease {args.lease} s: "
                  f"{report.summary()}", flush=True)
            bad = bool(report.duplicated or report.lost or report.lost_events or report.problems
                       or report.completed_runs + report.interrupted_runs != report.runs)
        rates = {n: throughput(cluster, n, args.clients, args.throughput_runs) for n in (1, 2)}
        print(f"throughput ({args.clients} clients x {args.throughput_runs} runs of 3 ops, {os.cpu_count()} CPUs): "
              f"1 replica {rates[1]:.1f} runs/s, 2 replicas {rates[2]:.1f} runs/s "
              f"({rates[2] / rates[1]:.2f}x)", flush=True)
        for lease in (float(x) for x in args.leases.split(",")):
            print(f"takeover after SIGKILL, lease {lease:g} s: {takeover(cluster, lease):.2f} s", flush=True)
    finally:
        cluster_cm.__exit__(None, None, None)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
