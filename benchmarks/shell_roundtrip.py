"""Shell round trip: ``LocalExecutionEnvironment.exec_command`` vs a bare ``subprocess.run``.

Goal (issue 2): ours costs at most 1.3x the bare call for the same ``/bin/bash -c`` command.
Both run the same argv in the same directory; ours also filters the environment, resolves
the working directory, starts a new process group, reads both pipes concurrently and
watches a timeout. Rounds alternate between the two so machine noise hits both alike.

Run: ``.venv/bin/python benchmarks/shell_roundtrip.py [ROUNDS]``
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time

from codeloop.environments import LocalExecutionEnvironment

COMMANDS = ["true", "echo hello", "seq 1 2000", "ls -la /usr/bin | head -50 >&2"]


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as root:
        env = LocalExecutionEnvironment(root)
        await env.initialize()
        print(f"{'command':32} {'subprocess.run':>15} {'exec_command':>13} {'ratio':>6}  (medians; ratio = median of paired ratios)")
        ratios = []
        for command in COMMANDS:
            ours: list[float] = []
            bare: list[float] = []
            cpu_ours = cpu_bare = 0.0
            for _ in range(10):  # warm-up: page cache, first-call imports
                await env.exec_command(command)
                subprocess.run(["/bin/bash", "-c", command], cwd=root, capture_output=True)
            for _ in range(rounds):
                c0, t0 = time.process_time(), time.perf_counter()
                subprocess.run(["/bin/bash", "-c", command], cwd=root, capture_output=True, env=os.environ)
                c1, t1 = time.process_time(), time.perf_counter()
                result = await env.exec_command(command)
                c2, t2 = time.process_time(), time.perf_counter()
                assert result.exit_code == 0, result
                bare.append(t1 - t0)
                ours.append(t2 - t1)
                cpu_bare += c1 - c0
                cpu_ours += c2 - c1
            b, o = statistics.median(bare), statistics.median(ours)
            # Median of per-round ratios: each pair ran back to back, so load drift cancels.
            paired = statistics.median(x / y for x, y in zip(ours, bare, strict=True))
            ratios.append(paired)
            print(
                f"{command:32} {b * 1000:12.2f} ms {o * 1000:10.2f} ms {paired:6.2f}x"
                f"   parent CPU/call {cpu_bare / rounds * 1000:.2f} vs {cpu_ours / rounds * 1000:.2f} ms"
            )
        print(f"geometric mean of the ratios: {statistics.geometric_mean(ratios):.2f}x (goal <= 1.30x)")
        print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
