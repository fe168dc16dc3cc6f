"""Harness overhead of the agent loop per tool round (issue 5 benchmark).

A 500-round session with a scripted model that answers instantly (ScriptedAdapter) and an
instant tool, so nearly all measured time is the harness: building the request, recording
turns, events, loop detection, the tool pipeline (lookup/validate/execute/truncate). A second
run uses the real ``shell`` tool with ``cat`` of a small file, for comparison with peers.

Prints per-round time (each round: fastest of three runs, the machine is shared) at round 10
and round 500 (median of the 9 rounds around each), their
ratio (goal: <= 1.5, flat as history grows), the mean, and peak traced memory.

Peers, side by side when their venvs exist (``.bench/pydantic-ai`` with pydantic-ai-slim,
``.bench/mini`` with mini-swe-agent): the same rounds, each running ``cat small.txt`` through
bash, driven by their own instant scripted models (``benchmarks/peers/*.py``). The ratio
column compares each peer's per-round time with codeloop's shell run.

Usage: .venv/bin/python benchmarks/loop_overhead.py [--rounds 500]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import subprocess
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from codeloop.agent.config import SessionConfig
from codeloop.agent.session import Session
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response, tool_call_response
from codeloop.llm.client import Client
from codeloop.llm.types import Request, Response, ToolDefinition
from codeloop.profiles import create_profile
from codeloop.tools import RegisteredTool


async def _noop(args: dict[str, Any], env: Any, ctx: Any) -> str:
    return "ok"


async def run_session(rounds: int, *, shell: bool, stream: bool, trace: bool) -> tuple[list[float], int]:
    """Per-round seconds (time between consecutive model calls) and, with ``trace``, peak
    traced bytes (tracemalloc slows the run, so timing runs do not trace)."""
    with tempfile.TemporaryDirectory() as root:
        Path(root, "small.txt").write_text("hello\n" * 10)
        profile = create_profile("anthropic")
        profile.tool_registry.register(RegisteredTool(
            ToolDefinition("noop", "Does nothing", {"type": "object", "properties": {"i": {"type": "integer"}}}),
            _noop))
        stamps: list[float] = []

        def model(request: Request) -> Response:
            stamps.append(time.perf_counter())
            adapter.requests.clear()  # the adapter's own record is not the harness's memory
            i = len(stamps)
            if i > rounds:
                return text_response("done")
            call = ("shell", {"command": "cat small.txt"}) if shell else ("noop", {"i": i})
            return tool_call_response(call)

        adapter = ScriptedAdapter([model] * (rounds + 1))
        session = Session(profile, LocalExecutionEnvironment(root),
                          SessionConfig(stream=stream, max_tool_rounds_per_input=rounds + 1),
                          Client({"scripted": adapter}))
        if trace:
            tracemalloc.start()
        await session.submit("go")
        peak = tracemalloc.get_traced_memory()[1] if trace else 0
        tracemalloc.stop()
        return [b - a for a, b in itertools.pairwise(stamps)], peak


def report(name: str, per_round: list[float], peak: int) -> None:
    n = len(per_round)
    early = statistics.median(per_round[5:14])
    late = statistics.median(per_round[n - 9:])
    print(f"{name:34s} round10 {early * 1e3:7.3f} ms  round{n} {late * 1e3:7.3f} ms  "
          f"ratio {late / early:5.2f}  mean {statistics.fmean(per_round) * 1e3:7.3f} ms  "
          f"p90 {sorted(per_round)[int(n * 0.9)] * 1e3:7.3f} ms  "
          f"peak {peak / 1e6:6.1f} MB (tracemalloc)")


BENCH = Path(__file__).resolve().parents[1] / ".bench"
PEERS = {"pydantic-ai": ("pydantic-ai", "pydantic_ai_rounds.py"), "mini-swe-agent": ("mini", "mini_rounds.py")}


def run_peer(venv: str, script: str, rounds: int, trace: bool) -> tuple[list[float], int]:
    with tempfile.TemporaryDirectory() as root:
        Path(root, "small.txt").write_text("hello\n" * 10)
        done = subprocess.run(
            [str(BENCH / venv / "bin" / "python"), str(Path(__file__).parent / "peers" / script), str(rounds), root,
             "trace" if trace else "notrace"], capture_output=True, text=True, timeout=1800, check=True)
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return data["per_round_s"], data["peak_bytes"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=500)
    args = parser.parse_args()
    for name, shell, stream in (("codeloop instant tool, complete()", False, False),
                                ("codeloop instant tool, stream()", False, True),
                                ("codeloop shell `cat`, complete()", True, False)):
        # The machine is shared: take, for each round, the fastest of three runs.
        runs = [asyncio.run(run_session(args.rounds, shell=shell, stream=stream, trace=False))[0]
                for _ in range(3)]
        per_round = [min(times) for times in zip(*runs, strict=True)]
        _, peak = asyncio.run(run_session(args.rounds, shell=shell, stream=stream, trace=True))
        report(name, per_round, peak)
        if shell:
            ours = statistics.median(per_round)
    for peer, (venv, script) in PEERS.items():
        if not (BENCH / venv / "bin" / "python").exists():
            print(f"{peer:34s} skipped: create .bench/{venv} (see the module docstring)")
            continue
        runs = [run_peer(venv, script, args.rounds, trace=False)[0] for _ in range(3)]
        per_round = [min(times) for times in zip(*runs, strict=True)]
        _, peak = run_peer(venv, script, args.rounds, trace=True)
        report(f"{peer} shell `cat`", per_round, peak)
        print(f"{'':34s} codeloop is {statistics.median(per_round) / ours:.1f}x faster per round (medians)")


if __name__ == "__main__":
    main()
