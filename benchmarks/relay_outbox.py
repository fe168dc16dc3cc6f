"""Relay outbox for a 20,000-file workspace (goal: under 1 s).

Ours: ``write_outbox`` as ``relay step`` runs it: list the workspace through the
``LocalExecutionEnvironment``, render every section, write the file atomically (fsync).
Measured listing every file (``max_listed_files=0``, the spec's behaviour) and with the
default limit (2000). References, side by side:

- ``os.walk``: a bare Python walk + stat producing the same lines, no file written;
- ``find``: ``find -type f -printf '%P (%s bytes)\\n'``, the C floor for the listing.

Prints medians and ratios; asserts nothing.

    .venv/bin/python benchmarks/relay_outbox.py [--files 20000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from codeloop.relay.config import load_config
from codeloop.relay.engine import write_outbox
from codeloop.relay.session import SessionState
from codeloop.relay.workspace import open_workspace


def make_tree(root: Path, files: int) -> None:
    """``files`` files in 100-file directories, plus a ``.git`` of 3000 objects (skipped)."""
    for i in range(files):
        directory = root / f"pkg{i // 1000:03d}" / f"mod{(i // 100) % 10}"
        if i % 100 == 0:
            directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{i}.py").write_text(f"x = {i}\n")
    for i in range(3000):
        directory = root / ".git" / "objects" / f"{i % 256:02x}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{i:038x}").write_bytes(b"blob")


def walk_listing(root: Path) -> str:
    lines = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        rel = os.path.relpath(dirpath, root)
        for name in filenames:
            path = name if rel == "." else f"{rel}/{name}"
            lines.append(f"  {path} ({os.stat(os.path.join(dirpath, name)).st_size} bytes)")
    lines.sort()
    return "\n".join(lines)


def median(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "relay"
        workspace = root / "workspace"
        workspace.mkdir(parents=True)
        make_tree(workspace, options.files)
        results: dict[str, float] = {}
        for label, limit in (("ours, all files", 0), ("ours, default limit 2000", 2000)):
            config = load_config(str(root), {"max_listed_files": limit}, environ={})
            config.ensure_dirs()
            state = SessionState(session_id="a1b2c3d4", task="benchmark", workspace=str(workspace))
            state = replace(state, sequence_number=2)
            env = open_workspace(workspace, config, state.policy)
            path = asyncio.run(write_outbox(config, state, env))
            size = path.stat().st_size
            results[label] = median(
                lambda c=config, s=state, e=env: asyncio.run(write_outbox(c, s, e)), options.runs
            )
            print(f"{label:28s} {results[label]:7.3f} s  (outbox {size / 1e6:.2f} MB)")
        results["os.walk"] = median(lambda: walk_listing(workspace), options.runs)
        find = ["find", ".", "-name", ".git", "-prune", "-o", "-type", "f", "-printf", "%P (%s bytes)\n"]
        results["find"] = median(
            lambda: subprocess.run(find, cwd=workspace, capture_output=True, check=True), options.runs
        )
        print(f"{'os.walk listing':28s} {results['os.walk']:7.3f} s")
        print(f"{'find listing':28s} {results['find']:7.3f} s")
        ours = results["ours, all files"]
        print(
            f"ratio ours(all)/os.walk {ours / results['os.walk']:.2f}, ours(all)/find {ours / results['find']:.2f}"
        )
        print(f"goal: {options.files} files under 1 s")


if __name__ == "__main__":
    main()
