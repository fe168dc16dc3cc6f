"""``codeloop batch`` against a shell loop of ``codeloop run``, side by side in one run (issue 39).

Every mode runs the same N tasks against the same loopback model (tests/batch/task_model.py:
three replies per task, answered at once, so what is measured is codeloop's own cost), each
task in a fresh empty workspace, each followed by its check command:

- ``loop``: the reference, ``codeloop run TASK --cwd WS ...`` and then the check, one task
  after the other from a shell loop (``bash -c 'for ...'``), as a user without ``batch`` would;
- ``local-W``: ``codeloop batch --workers W`` for each W of ``--workers`` (default 1 2 4 8);
- ``ray-W``: ``codeloop batch --ray ADDRESS --workers W`` on a Ray cluster this script starts
  on this machine (one head node with ``--num-cpus`` = the largest W; ``--no-ray`` skips it).

Printed per mode: wall time, seconds per task, tasks per second, the speed-up over the same
executor with one worker, the per-task time as a share of the loop's (``vs loop``), and the
per-task overhead: a worker's wall time per task less a session's own time (the mean
``timing.session`` of the batch's result lines; for the loop, the same session time is
assumed), and that overhead as a share of the loop's (``ovh/loop``, the issue's goal: under 10 %).
The batch does more per task than the loop (a baseline of the workspace, its patch, the
result line), so a share under 100 % is what a warm worker saves over a process start.

    python benchmarks/batch_scale.py                 # 100 tasks, 1 2 4 8 workers, local and Ray
    python benchmarks/batch_scale.py --tasks 10 --workers 1 2 --json out.json

Ray's start-up (``ray start --head``) is timed and printed apart; it is not in any mode's time.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "batch"))
from task_model import TaskModel  # noqa: E402

BIN = Path(sys.executable).parent
CODELOOP = str(BIN / "codeloop")
RAY = str(BIN / "ray")
CHECK = "grep -q solved answer.txt"


def write_tasks(path: Path, count: int) -> None:
    path.write_text("".join(json.dumps({"id": f"t{i}", "instruction": f"benchmark task {i}", "check": CHECK}) + "\n"
                            for i in range(count)))


def clean_env(state: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(CODELOOP_STATE_DIR=str(state / "state"), CODELOOP_CONFIG_DIR=str(state / "config"),
               RAY_USAGE_STATS_ENABLED="0", **extra)
    return env


def run_loop(count: int, model: TaskModel, work: Path) -> float:
    """The reference: a shell loop of ``codeloop run`` + the check, one task at a time."""
    script = (f"for i in $(seq 0 {count - 1}); do ws={shlex.quote(str(work))}/ws$i; mkdir -p $ws; "
              f"{shlex.quote(CODELOOP)} run \"benchmark task $i\" --cwd $ws --base-url {model.base_url} "
              f"--profile anthropic --approval never-ask --quiet > /dev/null 2>&1 || exit 1; "
              f"(cd $ws && {CHECK}) || exit 1; done")
    started = time.monotonic()
    subprocess.run(["bash", "-c", script], check=True, env=clean_env(work))
    return time.monotonic() - started


def run_batch(count: int, model: TaskModel, work: Path, workers: int, ray: str | None) -> tuple[float, float]:
    """(wall seconds, mean seconds of a task's session as its result line times it)."""
    work.mkdir(parents=True)
    tasks = work / "tasks.jsonl"
    write_tasks(tasks, count)
    argv = [CODELOOP, "batch", str(tasks), "--base-url", model.base_url, "--profile", "anthropic", "--json",
            "--workers", str(workers)]
    if ray is not None:
        argv += ["--ray", ray]
    started = time.monotonic()
    subprocess.run(argv, check=True, env=clean_env(work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    lines = [json.loads(line) for line in (work / "tasks.results.jsonl").read_text().splitlines()]
    solved = sum(1 for line in lines if (line.get("check") or {}).get("passed"))
    if len(lines) != count or solved != count:
        raise SystemExit(f"{work}: {len(lines)} results, {solved} solved of {count}")
    return seconds, sum(line["timing"]["session"] for line in lines) / count


def start_ray(root: Path, cpus: int) -> tuple[str, int, float]:
    """A one-node Ray cluster on 127.0.0.1: (address, process group, seconds to start)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    proc = subprocess.Popen([RAY, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
                             "--num-cpus", str(cpus), "--include-dashboard", "false", "--temp-dir", str(root / "ray"),
                             "--disable-usage-stats"],
                            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "CODELOOP_BATCH_WORK_DIR": str(root / "node")},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    out, _ = proc.communicate(timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"ray start failed:\n{out}")
    return f"127.0.0.1:{port}", proc.pid, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--no-ray", action="store_true", help="Skip the Ray modes.")
    parser.add_argument("--no-loop", action="store_true", help="Skip the shell loop (no 'vs loop' column).")
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the rows as JSON.")
    args = parser.parse_args(argv)
    # Short: Ray's sockets live under the temp dir and must fit in 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="clbs-", dir="/tmp"))
    rows: list[dict[str, object]] = []
    ray_group = None
    with TaskModel() as model:
        try:
            if not args.no_loop:
                rows.append({"mode": "loop", "workers": 1, "seconds": run_loop(args.tasks, model, root / "loop")})
            for workers in args.workers:
                seconds, session = run_batch(args.tasks, model, root / f"local-{workers}", workers, None)
                rows.append({"mode": f"local-{workers}", "workers": workers, "seconds": seconds, "session": session})
            if not args.no_ray:
                address, ray_group, ray_start = start_ray(root, max(args.workers))
                print(f"ray start --head: {ray_start:.1f} s (not counted below)")
                for workers in args.workers:
                    seconds, session = run_batch(args.tasks, model, root / f"ray-{workers}", workers, address)
                    rows.append({"mode": f"ray-{workers}", "workers": workers, "seconds": seconds, "session": session})
        finally:
            if ray_group is not None:
                os.killpg(ray_group, signal.SIGKILL)
            shutil.rmtree(root, ignore_errors=True)  # 100 workspaces per mode, and Ray's temp dir
    loop = next((float(row["seconds"]) for row in rows if row["mode"] == "loop"), None)  # type: ignore[arg-type]
    # A session costs the same in the loop and in a batch (same model, same machine): the rest
    # of a task's time is each way's overhead. The loop's session time is taken from the batch
    # with one local worker (codeloop run does not time its phases).
    session = next((float(row["session"]) for row in rows if row["mode"] == "local-1"), None)  # type: ignore[arg-type]
    loop_overhead = None if loop is None or session is None else loop / args.tasks - session
    print(f"{args.tasks} tasks, {os.cpu_count()} CPUs; session {session or 0:.2f} s per task (local-1)")
    print(f"{'mode':<10} {'wall s':>8} {'s/task':>8} {'tasks/s':>8} {'speed-up':>9} {'vs loop':>8} "
          f"{'overhead':>9} {'ovh/loop':>9}")
    for row in rows:
        seconds = float(row["seconds"])  # type: ignore[arg-type]
        kind = str(row["mode"]).split("-")[0]
        one = next((float(r["seconds"]) for r in rows if str(r["mode"]).startswith(kind) and r["workers"] == 1),  # type: ignore[arg-type]
                   seconds)
        # Overhead per task of one worker's stream of tasks: its share of the wall time, less a session.
        overhead = None if session is None else seconds * int(row["workers"]) / args.tasks - session  # type: ignore[call-overload]
        row.update(per_task=seconds / args.tasks, throughput=args.tasks / seconds, speedup=one / seconds,
                   vs_loop=None if loop is None else seconds / loop, overhead=overhead,
                   overhead_vs_loop=None if overhead is None or not loop_overhead else overhead / loop_overhead)
        share = "" if row["vs_loop"] is None else f"{100 * float(row['vs_loop']):.0f} %"  # type: ignore[arg-type]
        ovh = "" if overhead is None else f"{overhead:.2f}"
        ratio = "" if row["overhead_vs_loop"] is None else f"{100 * float(row['overhead_vs_loop']):.0f} %"  # type: ignore[arg-type]
        print(f"{row['mode']:<10} {seconds:>8.1f} {seconds / args.tasks:>8.2f} {args.tasks / seconds:>8.2f} "
              f"{one / seconds:>8.2f}x {share:>8} {ovh:>9} {ratio:>9}")
    if args.json is not None:
        args.json.write_text(json.dumps({"tasks": args.tasks, "cpus": os.cpu_count(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
