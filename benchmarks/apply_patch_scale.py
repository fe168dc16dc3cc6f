"""apply_patch at scale: 1,000 hunks on a 100,000-line file (goal < 100 ms), and 10× the
input (goal ≤ 12× the time, i.e. linear). Prints times and ratios; asserts nothing.

Three timings per size: parsing the patch, computing the new text (search + splice, pure
Python), and the whole tool call through ``execute_tool_call`` on a
``LocalExecutionEnvironment`` (read, fsync'd atomic write included).

    .venv/bin/python benchmarks/apply_patch_scale.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.tools.patch_apply import apply_replacements, compute_replacements
from codeloop.tools.patch_parser import UpdateFile, parse_patch
from codeloop.tools.pipeline import execute_tool_call
from codeloop.tools.sets import all_tools_registry


def make_case(lines: int, hunks: int) -> tuple[str, str]:
    """A file of distinct lines and a patch changing one line per hunk with 3 lines of context."""
    text = "".join(f"value_{i} = compute({i})\n" for i in range(lines))
    step = lines // hunks
    out = ["*** Begin Patch", "*** Update File: big.py"]
    for h in range(hunks):
        at = h * step + step // 2
        out.append("@@")
        out += [f" value_{i} = compute({i})" for i in range(at - 3, at)]
        out.append(f"-value_{at} = compute({at})")
        out.append(f"+value_{at} = compute({at} + 1)")
        out += [f" value_{i} = compute({i})" for i in range(at + 1, at + 4)]
    out.append("*** End Patch")
    return text, "\n".join(out) + "\n"


def best_of(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def tool_time(text: str, patch: str, runs: int) -> float:
    registry = all_tools_registry()
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        env = LocalExecutionEnvironment(tmp)
        await env.initialize()
        for _ in range(runs):
            (Path(tmp) / "big.py").write_text(text)
            start = time.perf_counter()
            result = await execute_tool_call(registry, "apply_patch", {"patch": patch}, env)
            times.append(time.perf_counter() - start)
            assert not result.is_error, result.output
        await env.cleanup()
    return statistics.median(times)


def measure(lines: int, hunks: int, runs: int) -> tuple[float, float, float, float]:
    text, patch = make_case(lines, hunks)
    hunk = parse_patch(patch).hunks[0]
    assert isinstance(hunk, UpdateFile)
    file_lines = text.split("\n")[:-1]
    parse = best_of(runs, lambda: parse_patch(patch))
    compute = best_of(runs, lambda: apply_replacements(file_lines, compute_replacements(file_lines, "big.py", hunk.chunks)))
    whole = asyncio.run(tool_time(text, patch, runs))
    # The platform's own scaling for the same sizes: split and re-join the file once.
    baseline = best_of(runs, lambda: "\n".join(text.split("\n")))
    return parse, compute, whole, baseline


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    small = measure(100_000, 1_000, runs)
    large = measure(1_000_000, 10_000, runs)
    for label, (p, c, w, b) in (("100k lines / 1k hunks", small), ("1M lines / 10k hunks", large)):
        print(
            f"{label:22s} parse {p * 1000:7.1f} ms  search+splice {c * 1000:7.1f} ms  "
            f"tool call {w * 1000:7.1f} ms  (reference split+join {b * 1000:6.1f} ms)"
        )
    print(f"goal: tool call on 100k/1k < 100 ms -> {small[2] * 1000:.1f} ms")
    print(
        f"10x input costs: parse {large[0] / small[0]:.1f}x, search+splice {large[1] / small[1]:.1f}x, "
        f"tool call {large[2] / small[2]:.1f}x (goal <= 12x); reference split+join {large[3] / small[3]:.1f}x"
    )


if __name__ == "__main__":
    main()
