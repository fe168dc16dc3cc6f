"""The delete race of issue 22 at benchmark scale: 100,000 tries with the safe open, and
the same harness with a plain path ``unlink`` (the code before the fix) to show that the
harness can win the race. Prints leaks per mode; asserts nothing.

    .venv/bin/python benchmarks/delete_race.py [--iterations 100000] [--mode both|safe|unsafe]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from codeloop.environments.local import LocalExecutionEnvironment

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from security.race_harness import run_delete_race


async def _one(mode: str, iterations: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = LocalExecutionEnvironment(Path(tmp) / "ws")

        async def unsafe(path: str) -> None:
            parent, _, name = path.rpartition("/")
            os.unlink(env.resolve(parent) / name)

        started = time.monotonic()
        leaks, done = await run_delete_race(Path(tmp), env.delete_file if mode == "safe" else unsafe, iterations)
        print(f"{mode}: {iterations} tries, {done} deletes, {leaks} leaks ({time.monotonic() - started:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=100_000)
    parser.add_argument("--mode", choices=["both", "safe", "unsafe"], default="both")
    args = parser.parse_args()
    for mode in ("safe", "unsafe") if args.mode == "both" else (args.mode,):
        asyncio.run(_one(mode, args.iterations))


if __name__ == "__main__":
    main()
