"""The existing benchmarks on two commits of codeloop, side by side in one run (issue 18).

A refactor must not make the engine slower: this runs each benchmark of the list below on an
old and a new commit (each checked out in a temporary git worktree, imported through
``PYTHONPATH`` with this venv's interpreter), alternating old/new so machine load drifts over
both alike, and prints each side's median figure and the ratio new/old (goal: within 5 %).

Each benchmark runs with its own script from its own commit, so a renamed module on one side
does not matter. The figures compared are the ones each benchmark reports first:

- loop_overhead: mean harness time per round of the instant-tool session (ms);
- relay_outbox: seconds to write the outbox listing every file;
- spaces_load: ``spaces serve``'s throughput over a bare uvicorn app's in the same run (higher is
  better: the cost is old/new there);
- grep_vs_rg: the tool's median time for the first pattern (ms);
- shell_roundtrip: median ``exec_command`` time of the first command (ms);
- llm_overhead: ``Client.complete()`` time per call against an instant loopback server (µs).

Usage::

    .venv/bin/python benchmarks/side_by_side.py --old cfa70dd --new HEAD [--repeats 3] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Bench:
    name: str
    args: tuple[str, ...]
    pattern: str
    """Regex whose first group is the figure, searched in the benchmark's stdout."""
    higher_is_better: bool = False


BENCHES = (
    Bench("loop_overhead", ("loop_overhead.py", "--rounds", "300"), r"mean\s+([\d.]+) ms"),
    Bench("relay_outbox", ("relay_outbox.py", "--files", "20000", "--runs", "3"),
          r"ours, all files\s+([\d.]+) s"),
    Bench("spaces_load", ("spaces_load.py", "--clients", "20", "--runs", "20"),
          r'"ratio": ([\d.]+)', higher_is_better=True),
    Bench("grep_vs_rg", ("grep_vs_rg.py", "--files", "20000", "--runs", "5"), r"tool\s+([\d.]+) ms"),
    Bench("shell_roundtrip", ("shell_roundtrip.py", "40"), r"ms\s+([\d.]+) ms\s+[\d.]+x"),
    Bench("llm_overhead", ("llm_overhead.py", "--requests", "500", "--tokens", "20000"),
          r"Client\.complete\s+([\d.]+) us/call"),
)


def checkout(ref: str, where: Path) -> Path:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(where), ref], check=True)
    return where


def run_once(tree: Path, bench: Bench, extra: list[str] | None = None) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    done = subprocess.run([sys.executable, str(tree / "benchmarks" / bench.args[0]), *bench.args[1:], *(extra or [])],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
    found = re.search(bench.pattern, done.stdout)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{bench.name} in {tree} gave no figure (exit {done.returncode}):\n"
                           f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the commit before the change")
    parser.add_argument("--new", default="HEAD", help="the commit after it (default HEAD)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side, alternating")
    parser.add_argument("--only", nargs="*", default=None, help="benchmark names to run")
    parser.add_argument("--new-arg", action="append", default=[],
                        help="an argument given to the new side's benchmark only (a setting the old one "
                             "lacks, e.g. --new-arg=--no-undo for spaces_load); repeatable")
    options = parser.parse_args()
    chosen = [b for b in BENCHES if options.only is None or b.name in options.only]
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as tmp:
        old = checkout(options.old, Path(tmp, "old"))
        new = checkout(options.new, Path(tmp, "new"))
        try:
            print(f"old {options.old}  new {options.new} {' '.join(options.new_arg)}  repeats {options.repeats}  "
                  f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
            for bench in chosen:
                figures: dict[str, list[float]] = {"old": [], "new": []}
                try:
                    for _ in range(options.repeats):
                        figures["old"].append(run_once(old, bench))
                        figures["new"].append(run_once(new, bench, options.new_arg))
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    print(f"{bench.name:16s} no figure: {exc}", flush=True)
                    continue
                o, n = statistics.median(figures["old"]), statistics.median(figures["new"])
                ratio = o / n if bench.higher_is_better else n / o
                verdict = "ok" if ratio <= 1.05 else "SLOWER"
                print(f"{bench.name:16s} old {o:10.3f}  new {n:10.3f}  cost new/old {ratio:5.3f}  {verdict}"
                      f"   (runs old {figures['old']} new {figures['new']})", flush=True)
        finally:
            for tree in (old, new):
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)


if __name__ == "__main__":
    main()
