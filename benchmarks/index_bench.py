"""Code index on a large real tree: the running interpreter's standard library.

Measures, side by side in one run:
- full build time, no-change rebuild, rebuild after editing one file;
- search latency p50/p95 of ``CodeIndex.search`` and of ``rg`` for the same queries
  (``rg -F -i -n -m 10 QUERY``: literal, case-insensitive), with the ratio;
- the index's size on disk next to the tree's.

The tree is copied to a temporary directory first (the edit must not touch the real
stdlib). Run: ``.venv/bin/python benchmarks/index_bench.py [--runs 20] [--tree DIR]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path

QUERIES = ["urlopen", "def __init__", "ThreadPoolExecutor", "socket timeout", "json.dumps(", "class TestCase",
           "decimal context precision", "KeyError"]


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--tree", default=sysconfig.get_paths()["stdlib"], help="Tree to index (copied first).")
    parser.add_argument("--runs", type=int, default=20, help="Repetitions per search query.")
    args = parser.parse_args()

    from codeloop.environments.search import find_rg
    from codeloop.index import CodeIndex

    rg = find_rg()
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(args.tree, tree, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "site-packages", "*.pyc"))
        os.environ["CODELOOP_INDEX_DIR"] = str(Path(tmp) / "index")
        index = CodeIndex(tree)

        started, cpu = time.perf_counter(), time.process_time()
        report = index.build()
        full_s, full_cpu = time.perf_counter() - started, time.process_time() - cpu
        started = time.perf_counter()
        index.build()
        noop_s = time.perf_counter() - started
        target = tree / "json" / "encoder.py"
        if not target.exists():
            target = next(tree.rglob("*.py"))
        target.write_text(target.read_text() + "\n\ndef _bench_marker():\n    return 1\n")
        started = time.perf_counter()
        touched = index.build()
        touch_s = time.perf_counter() - started
        assert touched.updated == 1, touched
        status = index.status()

        print(f"tree: {args.tree} ({report.files_total} files, {_tree_bytes(tree) / 1e6:.1f} MB), "
              f"{status.symbols} symbols")
        print(f"full build:             {full_s:8.2f} s wall, {full_cpu:.2f} s CPU (one core)")
        print(f"rebuild, no change:     {noop_s:8.3f} s")
        print(f"rebuild, 1 file edited: {touch_s:8.3f} s")
        print(f"index size:             {status.size_bytes / 1e6:8.1f} MB")
        print()
        print(f"{'query':<28} {'ours p50':>9} {'ours p95':>9} {'rg p50':>9} {'rg p95':>9} {'rg/ours':>8}")
        ours_all: list[float] = []
        rg_all: list[float] = []
        for query in QUERIES:
            ours: list[float] = []
            theirs: list[float] = []
            for _ in range(args.runs):
                started = time.perf_counter()
                index.search(query, 10)
                ours.append((time.perf_counter() - started) * 1000)
                if rg:
                    started = time.perf_counter()
                    subprocess.run([rg, "-F", "-i", "-n", "-m", "10", query, str(tree)], capture_output=True,
                                   check=False)
                    theirs.append((time.perf_counter() - started) * 1000)
            ours_all += ours
            rg_all += theirs
            rg_cols = (f"{statistics.median(theirs):9.1f} {_percentile(theirs, 95):9.1f} "
                       f"{statistics.median(theirs) / statistics.median(ours):8.1f}x") if theirs else "   (no rg)"
            print(f"{query:<28} {statistics.median(ours):9.1f} {_percentile(ours, 95):9.1f} {rg_cols}")
        if rg_all:
            print(f"{'ALL (ms)':<28} {statistics.median(ours_all):9.1f} {_percentile(ours_all, 95):9.1f} "
                  f"{statistics.median(rg_all):9.1f} {_percentile(rg_all, 95):9.1f} "
                  f"{statistics.median(rg_all) / statistics.median(ours_all):8.1f}x")


if __name__ == "__main__":
    main()
