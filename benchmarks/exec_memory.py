"""Memory of a command that prints 1 GB: peak RSS of the Python process running it.

Goal (issue 2): the process stays under 150 MB while ``exec_command`` collects 1 GB of
output, keeping head and tail in memory and spilling the whole to a temporary file
(``ExecResult.full_output_path``). ``--reference`` also runs a bare
``subprocess.run(capture_output=True)`` of the same command in a child interpreter for
comparison (it holds the whole output in memory: expect over 1 GB).

Run: ``.venv/bin/python benchmarks/exec_memory.py [MEGABYTES] [--reference]``
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time

from codeloop.environments import LocalExecutionEnvironment


def _peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # Linux reports KiB


async def main(megabytes: int, reference: bool) -> None:
    command = f"yes 'codeloop output line of about sixty bytes, repeated many times' | head -c {megabytes}M"
    with tempfile.TemporaryDirectory() as root:
        env = LocalExecutionEnvironment(root)
        await env.initialize()
        await env.exec_command("true")
        before = _peak_mb()
        start = time.perf_counter()
        result = await env.exec_command(command, timeout_ms=600_000)
        elapsed = time.perf_counter() - start
        after = _peak_mb()
    spilled = os.path.getsize(result.full_output_path) if result.full_output_path else 0
    if result.full_output_path:
        os.unlink(result.full_output_path)
    print(f"printed          {result.stdout_bytes / 2**20:10.0f} MiB in {elapsed:.2f} s "
          f"({result.stdout_bytes / 2**20 / elapsed:.0f} MiB/s)")
    print(f"kept in memory   {len(result.stdout) / 2**20:10.2f} MiB of stdout (head + tail)")
    print(f"spill file       {spilled / 2**20:10.0f} MiB (complete output)")
    print(f"peak RSS         {before:10.1f} MiB before, {after:.1f} MiB after (goal < 150 MiB)")
    if reference:
        probe = (
            "import resource, subprocess, sys\n"
            f"subprocess.run(['/bin/bash', '-c', {command!r}], capture_output=True)\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
        )
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        ref = float(out.stdout.strip())
        print(f"reference        {ref:10.1f} MiB peak RSS for subprocess.run(capture_output=True); "
              f"ratio ours/reference {after / ref:.3f}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    asyncio.run(main(int(args[0]) if args else 1024, "--reference" in sys.argv))
