"""What a whole-workspace snapshot costs (issue 35), side by side with the reference
``git add -A && git write-tree`` on the same tree (a warm index, ``core.untrackedCache=true``).

Workspaces of 2,000 and 50,000 small files in 20-file directories; for each: a snapshot when
nothing changed, when 10 files changed and when 1,000 changed (median of ``--runs``; files
are changed between runs, outside the timing), as a session takes it (the file watcher says
what changed) and as a full scan (the fallback when events may have been lost). Also the added time of one changing tool call
in a session: the snapshots before and after a ``shell`` call that changes one file
(``Checkpoints.before``/``after``, the pipeline's checkpoint seam). Prints a table; asserts
nothing.

    .venv/bin/python benchmarks/snapshot_cost.py [--sizes 2000 50000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def make_tree(root: Path, files: int) -> list[Path]:
    paths = []
    for i in range(files):
        directory = root / f"pkg{i // 400}" / f"mod{(i // 20) % 20}"
        if i % 20 == 0:
            directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"file{i}.py"
        path.write_text(f"value = {i}\n" * 5)
        paths.append(path)
    return paths


def touch(paths: list[Path], count: int, round_: int) -> None:
    for path in paths[:count]:
        path.write_text(f"changed {round_}\n")


def timed(action: Callable[[], object], prepare: Callable[[int], None], runs: int) -> float:
    times = []
    for n in range(runs):
        prepare(n)
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def reference(root: Path) -> Callable[[], object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    subprocess.run(["git", "config", "core.untrackedCache", "true"], cwd=root, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)  # warm index
    subprocess.run(["git", "update-index", "--untracked-cache"], cwd=root, check=True, env=env,
                   capture_output=True)
    return lambda: subprocess.run(["bash", "-c", "git add -A && git write-tree"], cwd=root, check=True, env=env,
                                  capture_output=True)


def bench_size(size: int, tmp: Path, runs: int) -> None:
    from codeloop.policy.approval import Effect, ToolCallRequest
    from codeloop.sessions.checkpoints import Checkpoints
    from codeloop.sessions.rewind import store_for
    from codeloop.sessions.watch import ChangeWatcher

    ours_root, ref_root = tmp / f"ours{size}", tmp / f"ref{size}"
    ours_root.mkdir()
    ref_root.mkdir()
    ours, ref = make_tree(ours_root, size), make_tree(ref_root, size)
    store = store_for("bench", ours_root)
    watcher = ChangeWatcher(ours_root, store.repository / "watch")
    try:
        watcher.take()
        store.snapshot()  # warm index, as the reference's

        def snapshot() -> object:  # what Checkpoints does before and after each changing call
            return store.snapshot(watcher.take())

        ref_action = reference(ref_root)
        for changed in (0, 10, 1000):
            if changed > size:
                continue
            r = timed(ref_action, lambda n, c=changed: touch(ref, c, n), runs)
            s = timed(snapshot, lambda n, c=changed: touch(ours, c, n), runs)
            full = timed(store.snapshot, lambda n, c=changed: touch(ours, c, n), runs)
            print(f"{size:>7} {changed:>8} {r:>13.1f} {s:>12.1f} {s / r:>6.2f} {full:>13.1f}", flush=True)
    finally:
        watcher.close()
    checkpoints = Checkpoints("bench", ours_root, store=store)
    call = ToolCallRequest("shell", {"command": "echo x > f"}, "c1", frozenset({Effect.EXEC}), None, "echo x > f")

    def one_call() -> None:
        checkpoints.before(call, call.effects, None, 1)
        ours[0].write_text("by the call\n")
        checkpoints.after(call, call.effects, None, 1, None)  # type: ignore[arg-type]

    try:
        one_call()  # starts the watcher and takes the base snapshot
        added = timed(one_call, lambda n: None, runs)
    finally:
        checkpoints.close()
    print(f"{size:>7} per shell call changing one file: {added:.1f} ms added (snapshots before + after)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 50000])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CODELOOP_STATE_DIR"] = str(Path(tmp) / "state")
        print(f"{'files':>7} {'changed':>8} {'reference ms':>13} {'snapshot ms':>12} {'ratio':>6} {'full scan ms':>13}")
        for size in args.sizes:
            bench_size(size, Path(tmp), args.runs)


if __name__ == "__main__":
    main()
