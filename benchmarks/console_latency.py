"""How long an event of a spaces run takes to appear in the web console, next to a raw SSE client.

Usage::

    .venv/bin/python benchmarks/console_latency.py [--events 40] [--gap 0.2] [--lines 10000]

Starts ``codeloop spaces serve`` on loopback and one run of ``--events`` message operations
``--gap`` seconds apart (a ``sleep`` between them). While it runs, a raw SSE client (httpx, ``/v1/runs/{id}/events``) and
the console page in headless Chromium (the system's, via Playwright) read it side by side;
each event's latency is its arrival (the raw client's parse; the page's insertion of the
event's item, seen by a MutationObserver) minus the event's own ``timestamp`` (the server's
clock, the same machine). Prints p50/p90 of both and the ratio of the medians (goal <= 1.2).

Then a run of ``--lines`` lines of output plus 400 events streams to the page: prints the
longest main-thread task the browser reports (Long Tasks API, goal < 200 ms) and the number
of event items and output lines left in the page (bounded: 300 items, 200 lines per output).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

CHROMIUM = os.environ.get("CODELOOP_CHROMIUM", "/usr/bin/chromium")
OBSERVE = """
window.__seen = {};
new MutationObserver((records) => {
  const now = Date.now();
  for (const r of records) for (const n of r.addedNodes)
    if (n.dataset && n.dataset.seq && !(n.dataset.seq in window.__seen)) window.__seen[n.dataset.seq] = now;
}).observe(document, {childList: true, subtree: true});
window.__longest = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries())
  window.__longest = Math.max(window.__longest, e.duration); }).observe({type: "longtask", buffered: true});
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stamp(event: dict[str, Any]) -> float:
    return dt.datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()


def start_server(data: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    from codeloop.spaces.database import open_store

    store = open_store(None, data)
    key = store.create_key("bench")[1]
    store.close()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "codeloop.cli.main", "spaces", "serve", "--port", str(port),
                             "--data-dir", str(data)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url, key
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


def run_in_background(url: str, key: str, sid: str, ops: list[dict[str, Any]]) -> threading.Thread:
    def post() -> None:
        httpx.post(f"{url}/v1/spaces/{sid}/runs", json={"protocolVersion": "1.0", "operations": ops},
                   headers={"Authorization": f"Bearer {key}"}, timeout=600)
    t = threading.Thread(target=post, daemon=True)
    t.start()
    return t


def first_run(c: httpx.Client, sid: str) -> str:
    while True:
        runs = c.get(f"/v1/spaces/{sid}/runs").json()["runs"]
        if runs:
            return str(runs[0]["runId"])
        time.sleep(0.01)


def raw_client(url: str, key: str, rid: str, seen: dict[int, float], events: dict[int, dict[str, Any]]) -> None:
    with httpx.stream("GET", f"{url}/v1/runs/{rid}/events", headers={"Authorization": f"Bearer {key}"},
                      timeout=600) as r:
        seq = None
        for line in r.iter_lines():
            if line.startswith("id: "):
                seq = int(line[4:])
            elif line.startswith("data: ") and seq is not None:
                seen[seq] = time.time()
                events[seq] = json.loads(line[6:])
                seq = None


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--gap", type=float, default=0.2)
    parser.add_argument("--lines", type=int, default=10000)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        proc, url, key = start_server(Path(tmp))
        pw = sync_playwright().start()
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            context = browser.new_context(base_url=url)
            context.add_init_script(OBSERVE)
            page = context.new_page()
            page.goto("/console/login")
            page.fill("#key", key)
            page.click("form.login button")
            page.wait_for_url(f"{url}/")
            c = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
            sid = c.post("/v1/spaces", json={"name": "bench"}).json()["id"]

            # 1. latency, side by side
            # A message's event is stamped as it is emitted (a shell's when its command starts):
            # the messages are what is timed, the sleeps space them out.
            ops = [{"type": "shell", "command": "sleep 1"}]
            for i in range(args.events):
                ops += [{"type": "shell", "command": f"sleep {args.gap}"}, {"type": "message", "content": f"m{i}"}]
            t = run_in_background(url, key, sid, ops)
            rid = first_run(c, sid)
            raw_seen: dict[int, float] = {}
            events: dict[int, dict[str, Any]] = {}
            raw = threading.Thread(target=raw_client, args=(url, key, rid, raw_seen, events), daemon=True)
            raw.start()
            page.goto(f"/console/runs/{rid}")
            page.wait_for_selector("body[data-run-ended]", timeout=600_000)
            t.join()
            raw.join()
            page_seen = {int(k): v / 1000 for k, v in page.evaluate("window.__seen").items()}
            # Only events that arrived live in both (the page shows those already stored as it loads).
            live = [s for s in raw_seen if s in page_seen and s > 1 and events[s]["type"] == "message"]
            raw_ms = [(raw_seen[s] - stamp(events[s])) * 1000 for s in live]
            page_ms = [(page_seen[s] - stamp(events[s])) * 1000 for s in live]
            print(f"events compared: {len(live)}")
            print(f"raw SSE client  p50 {statistics.median(raw_ms):7.1f} ms  p90 {pct(raw_ms, 0.9):7.1f} ms")
            print(f"console page    p50 {statistics.median(page_ms):7.1f} ms  p90 {pct(page_ms, 0.9):7.1f} ms")
            print(f"page after raw  p50 {statistics.median(p - r for p, r in zip(page_ms, raw_ms, strict=True)):7.1f} ms")
            print(f"ratio of medians (page / raw): {statistics.median(page_ms) / statistics.median(raw_ms):.2f} "
                  "(goal <= 1.2)")

            # 2. a long output, streamed
            ops = [{"type": "shell", "command": "sleep 1"}] + [
                {"type": "message", "content": f"m{i}"} for i in range(400)] + [
                {"type": "shell", "command": f"seq 1 {args.lines}"}]
            t = run_in_background(url, key, sid, ops)
            time.sleep(0.3)
            runs = c.get(f"/v1/spaces/{sid}/runs").json()["runs"]
            rid = next(r["runId"] for r in runs if r["state"] == "running")
            page.goto(f"/console/runs/{rid}")
            page.wait_for_selector("body[data-run-ended]", timeout=600_000)
            t.join()
            items = page.locator("#events > li").count()
            lines = len((page.locator("#events > li").last.locator("pre.stdout").text_content() or "").split("\n"))
            nodes = page.evaluate("document.getElementsByTagName('*').length")
            print(f"{args.lines} lines + 400 events: longest main-thread task {page.evaluate('window.__longest')} ms "
                  f"(0: none over the API's 50 ms floor; goal < 200 ms); {items} event items, {lines} output lines, "
                  f"{nodes} elements in the page")
        finally:
            browser.close()
            pw.stop()
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
