"""Load test of ``codeloop spaces serve`` next to a bare uvicorn endpoint (the ceiling).

Usage::

    .venv/bin/python benchmarks/spaces_load.py [--clients 50] [--runs 100] [--shell] [--no-undo]

Each of N concurrent clients owns one space and posts R runs of small operations (message,
createFile, readFile; ``--shell`` adds an ``echo``). The same clients then post the same
bodies to a bare uvicorn app that only answers a fixed events message, in its own process,
so the ratio is "our service" / "what uvicorn + httpx alone can do on this machine".

Checked for every run: HTTP status (5xx counted), one event per operation in order with the
operation ids sent (lost / duplicated / reordered events counted), and for a sample of runs
the stored run (``GET /v1/runs/{id}``) holds exactly the events returned. Prints throughput,
p50/p99 latency and the ratio (goal >= 0.4).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

BARE_APP = '''
import json
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    ops = json.loads(body or b"{}").get("operations", [])
    out = {"protocolVersion": "1.0", "runId": "run_x", "status": "completed",
           "events": [{"type": o.get("type"), "operationId": o.get("id"), "success": True} for o in ops]}
    data = json.dumps(out).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": data})
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early with code {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not answer within 60 s")


def operations(client: int, run: int, shell: bool) -> list[dict[str, Any]]:
    tag = f"c{client}r{run}"
    ops: list[dict[str, Any]] = [
        {"type": "message", "id": f"{tag}-m", "content": "step"},
        {"type": "createFile", "id": f"{tag}-w", "path": f"out/{tag}.txt", "content": tag, "overwrite": True},
        {"type": "readFile", "id": f"{tag}-r", "path": f"out/{tag}.txt"},
    ]
    if shell:
        ops.append({"type": "shell", "id": f"{tag}-s", "command": f"echo {tag}"})
    return ops


class Tally:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.server_errors = 0
        self.other_errors = 0
        self.lost = 0
        self.duplicated = 0
        self.reordered = 0
        self.store_mismatch = 0
        self.error_kinds: dict[str, int] = {}

    def error(self, kind: str) -> None:
        self.other_errors += 1
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1

    def check(self, sent: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        got = [e.get("operationId") for e in events]
        want = [o["id"] for o in sent]
        self.lost += len(set(want) - set(got))
        self.duplicated += len(got) - len(set(got))
        if got != want and not set(want) - set(got) and len(got) == len(set(got)):
            self.reordered += 1


async def drive(base: str, key: str | None, clients: int, runs: int, shell: bool, bare: bool,
                undo: bool = True) -> tuple[Tally, float]:
    tally = Tally()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=300, limits=limits) as http:
        spaces: list[str] = []
        for _ in range(clients):
            if bare:
                spaces.append("bare")
                continue
            policy: dict[str, Any] = {"preset": "standard"}
            if not undo:
                policy["undo"] = {"enabled": False}
            r = await http.post("/v1/spaces", json={"policy": policy})
            r.raise_for_status()
            spaces.append(r.json()["id"])

        async def one_client(i: int) -> None:
            for j in range(runs):
                sent = operations(i, j, shell)
                path = "/run" if bare else f"/v1/spaces/{spaces[i]}/runs"
                t0 = time.perf_counter()
                try:
                    r = await http.post(path, json={"protocolVersion": "1.0", "operations": sent})
                except httpx.HTTPError as exc:
                    tally.error(type(exc).__name__)
                    continue
                tally.latencies.append(time.perf_counter() - t0)
                if r.status_code >= 500:
                    tally.server_errors += 1
                    continue
                if r.status_code != 200:
                    tally.error(f"HTTP {r.status_code}: {r.text[:120]}")
                    continue
                body = r.json()
                tally.check(sent, body["events"])
                if not bare and j % 10 == 0:
                    stored = (await http.get(f"/v1/runs/{body['runId']}")).json()["events"]
                    if stored != body["events"]:
                        tally.store_mismatch += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(one_client(i) for i in range(clients)))
        return tally, time.perf_counter() - t0


def report(name: str, tally: Tally, elapsed: float) -> float:
    n = len(tally.latencies)
    lat = sorted(tally.latencies)
    p50 = statistics.median(lat) * 1000 if lat else float("nan")
    p99 = lat[min(n - 1, int(n * 0.99))] * 1000 if lat else float("nan")
    rps = n / elapsed if elapsed else 0.0
    print(f"{name:<14} runs={n:<6} {rps:8.1f} runs/s   p50={p50:7.1f} ms   p99={p99:7.1f} ms   "
          f"5xx={tally.server_errors} other_errors={tally.other_errors} lost={tally.lost} "
          f"duplicated={tally.duplicated} reordered={tally.reordered} store_mismatch={tally.store_mismatch}")
    if tally.error_kinds:
        print(f"{'':<14} errors: {tally.error_kinds}")
    return rps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--shell", action="store_true", help="add a shell echo to every run")
    parser.add_argument("--sandbox", action="store_true", help="let the server use bubblewrap (slower)")
    parser.add_argument("--no-undo", action="store_true",
                        help='spaces with {"undo": {"enabled": false}}: no snapshots of their runs')
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="spaces-load-") as tmp:
        data = Path(tmp)
        from codeloop.spaces.database import open_store

        store = open_store(None, data)
        key = store.create_key("load")[1]
        store.close()
        port, bare_port = free_port(), free_port()
        cmd = [sys.executable, "-m", "codeloop.cli.main", "spaces", "serve", "--port", str(port), "--data-dir", tmp]
        if not args.sandbox:
            cmd.append("--no-sandbox")
        (data / "bare_app.py").write_text(BARE_APP)
        ours = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        bare = subprocess.Popen([sys.executable, "-m", "uvicorn", "bare_app:app", "--port", str(bare_port),
                                 "--log-level", "warning"], cwd=tmp, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": tmp})
        try:
            wait_healthy(f"http://127.0.0.1:{port}/health", ours)
            wait_healthy(f"http://127.0.0.1:{bare_port}/", bare)
            print(f"{args.clients} clients x {args.runs} runs, {len(operations(0, 0, args.shell))} operations each")
            bare_tally, bare_s = asyncio.run(drive(f"http://127.0.0.1:{bare_port}", None, args.clients, args.runs,
                                                   args.shell, bare=True))
            ours_tally, ours_s = asyncio.run(drive(f"http://127.0.0.1:{port}", key, args.clients, args.runs,
                                                   args.shell, bare=False, undo=not args.no_undo))
            bare_rps = report("bare uvicorn", bare_tally, bare_s)
            ours_rps = report("spaces serve", ours_tally, ours_s)
            ratio = ours_rps / bare_rps if bare_rps else 0.0
            print(f"ratio spaces/bare = {ratio:.2f} (goal >= 0.40)")
            print(json.dumps({"ratio": round(ratio, 3), "spaces_rps": round(ours_rps, 1),
                              "bare_rps": round(bare_rps, 1)}))
        finally:
            for proc in (ours, bare):
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    main()
