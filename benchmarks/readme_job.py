"""The README's main job with the embedded model, beside the bare model (issue 33).

``codeloop run "Create hello.py that prints hello, then run it"`` exactly as the README gives it
(no key, no ``--model``: the embedded default), in a fresh directory each time, against a warm
local server (one run first, not counted, warms it and its prompt cache). Beside it, on the same
server in the same run, the bare model answers the same sentence in one chat request: the
physical limit of "one model call". Prints each run (model calls, seconds, whether ``hello.py``
prints hello) and the medians with their ratio.

Example::

    .venv/bin/python benchmarks/readme_job.py --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import run_tasks  # noqa: E402  (benchmarks/ is not a package)

TASK = "Create hello.py that prints hello, then run it"
"""The README's first command's task, word for word."""
CODELOOP = str(Path(sys.executable).with_name("codeloop"))


def codeloop_once(work: Path) -> tuple[int, float, bool]:
    """(model calls, seconds, hello.py prints hello) of one README run in ``work``."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL", "_API_BASE"))}
    env["CODELOOP_STATE_DIR"] = str(work.parent / "state")
    start = time.monotonic()
    done = subprocess.run([CODELOOP, "run", TASK, "--cwd", str(work), "--approval", "never-ask", "--json"],
                          capture_output=True, text=True, env=env, timeout=900, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - start
    events = []
    for line in done.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    calls = sum(1 for e in events if e.get("kind") == "assistant_text_end")
    script = work / "hello.py"
    ok = False
    if script.is_file():
        ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
        ok = "hello" in ran.stdout.lower()
    return calls, seconds, ok


def bare_once(base_url: str, model: str) -> float:
    """Seconds of one chat request holding the same sentence (temperature 0)."""
    body = {"model": model, "messages": [{"role": "user", "content": TASK}], "temperature": 0, "max_tokens": 256}
    start = time.monotonic()
    httpx.post(f"{base_url.rstrip('/')}/chat/completions", json=body, timeout=600,
               headers={"Authorization": "Bearer sk-local"}).raise_for_status()
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="counted runs of each (after one warm-up)")
    parser.add_argument("--model", default="1.5b", help="the embedded model's size (the default is 1.5b)")
    args = parser.parse_args()
    base_url = run_tasks.local_base_url(args.model)
    ours, bare = [], []
    with tempfile.TemporaryDirectory(prefix="codeloop-readme-") as root:
        for n in range(args.runs + 1):
            work = Path(root) / f"run{n}"
            work.mkdir()
            calls, seconds, ok = codeloop_once(work)
            plain = bare_once(base_url, args.model)
            label = "warm-up" if n == 0 else f"run {n}"
            print(f"{label:8} codeloop {calls} model calls {seconds:6.1f}s hello.py {'prints hello' if ok else 'WRONG'}"
                  f" | bare {plain:5.1f}s", flush=True)
            if n:
                ours.append((calls, seconds, ok))
                bare.append(plain)
    med_ours = statistics.median(s for _c, s, _ok in ours)
    med_bare = statistics.median(bare)
    print(f"codeloop: median {med_ours:.1f}s, at most {max(c for c, _s, _ok in ours)} model calls, "
          f"{sum(ok for *_x, ok in ours)}/{len(ours)} right; bare model: median {med_bare:.1f}s; "
          f"ratio {med_ours / med_bare:.2f}")


if __name__ == "__main__":
    main()
