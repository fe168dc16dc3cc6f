"""Instructions per agent round on two commits, counted by valgrind: a figure load cannot move.

``side_by_side.py`` times the benchmarks, and on a shared 2-core machine a 5 % goal sits inside
the noise (one loop_overhead median moved 1.05 ↔ 1.12 between runs of the same commits). This
counts what the CPU executes instead: each commit runs the loop_overhead session (instant tool,
``complete()``) under ``valgrind --tool=callgrind`` with 2 and with 2 + ROUNDS rounds, and the
difference divided by ROUNDS is the harness's instructions per round, start-up and imports
cancelled out. Deterministic up to hash seeds (fixed here), so one run per side is enough.

It does not see cache misses or a larger heap, which time does: read it beside the timed
ratio, not instead of it.

Needs ``valgrind`` (Debian package; not part of ``scripts/system-deps``, benchmarks only).
Usage: ``.venv/bin/python benchmarks/loop_instructions.py --old 51cb17f --new HEAD [--rounds 300]
[--what loop|shell|spaces|spaces-undo-off]``
(about 2 minutes a side).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SESSION = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
import loop_overhead
asyncio.run(loop_overhead.run_session(int(sys.argv[2]), shell=False, stream=False, trace=False))
"""
SHELL = """
import asyncio, sys, tempfile
from codeloop.environments import LocalExecutionEnvironment
async def main(calls):
    env = LocalExecutionEnvironment(tempfile.mkdtemp())
    await env.initialize()
    for _ in range(calls):
        assert (await env.exec_command("true")).exit_code == 0
asyncio.run(main(int(sys.argv[2])))
"""
"""``--what shell``: shell_roundtrip's ``exec_command`` alone (the parent's instructions per call;
valgrind does not follow the child, the same bash on both sides)."""
SPACES = """
import asyncio, os, sys, tempfile
from pathlib import Path
import httpx
sys.path.insert(0, sys.argv[1])
from spaces_load import operations
from codeloop.spaces import policy_config
from codeloop.spaces.database import open_store
from codeloop.spaces.server import create_app
async def main(runs):
    data = Path(tempfile.mkdtemp())
    os.environ["CODELOOP_STATE_DIR"] = str(data / "state")
    store = open_store(None, data)
    key = store.create_key("load")[1]
    app = create_app(store, auth=True, sandbox=False)
    policy = {"preset": "standard"}
    if UNDO_OFF and hasattr(policy_config, "UndoConfig"):
        policy["undo"] = {"enabled": False}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1",
                                 headers={"Authorization": f"Bearer {key}"}) as c:
        sid = (await c.post("/v1/spaces", json={"policy": policy})).json()["id"]
        for j in range(runs):
            r = await c.post(f"/v1/spaces/{sid}/runs", json={"protocolVersion": "1.0", "operations": operations(0, j, False)})
            assert r.status_code == 200, r.text
asyncio.run(main(int(sys.argv[2])))
"""
"""``--what spaces``/``spaces-undo-off``: one run of spaces_load's operations (message, createFile,
readFile) through the spaces app in process (``httpx.ASGITransport``: the service, the pipeline,
the database and the middleware, without uvicorn's sockets); with the snapshots of issue 35 on,
git runs in child processes valgrind does not follow, so their cost is not in the count."""


def instructions(tree: Path, rounds: int, out: Path, script: str = SESSION) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", script,
         str(tree / "benchmarks"), str(rounds)], cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind on {tree} ({rounds} rounds) failed (exit {done.returncode}):\n{done.stderr[-1500:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", default="HEAD")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--what", choices=("loop", "shell", "spaces", "spaces-undo-off"), default="loop",
                        help="loop: an agent round (default); shell: one exec_command call; spaces: one "
                             "spaces run in process (spaces-undo-off: the new side's space has undo off)")
    options = parser.parse_args()
    script = {"shell": SHELL, "loop": SESSION, "spaces": "UNDO_OFF = False\n" + SPACES,
              "spaces-undo-off": "UNDO_OFF = True\n" + SPACES}[options.what]
    with tempfile.TemporaryDirectory(prefix="loop-instructions-") as tmp:
        trees = {}
        for side in ("old", "new"):
            trees[side] = Path(tmp, side)
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(trees[side]),
                            getattr(options, side)], check=True)
        try:
            # Two valgrind processes at once: one per core, and the counts do not depend on load.
            jobs = {(side, n): (trees[side], n, Path(tmp, f"{side}-{n}.out"), script)
                    for side in ("old", "new") for n in (2, 2 + options.rounds)}
            with ThreadPoolExecutor(2) as pool:
                counts = dict(zip(jobs, pool.map(lambda job: instructions(*job), jobs.values()), strict=True))
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
    per_round = {side: (counts[side, 2 + options.rounds] - counts[side, 2]) / options.rounds for side in ("old", "new")}
    start = {side: counts[side, 2] for side in ("old", "new")}
    print(f"old {options.old}  new {options.new}  rounds {options.rounds}")
    print(f"instructions per round   old {per_round['old']:,.0f}  new {per_round['new']:,.0f}  "
          f"new/old {per_round['new'] / per_round['old']:.3f}")
    print(f"start-up + 2 rounds      old {start['old']:,}  new {start['new']:,}  new/old {start['new'] / start['old']:.3f}")


if __name__ == "__main__":
    main()
