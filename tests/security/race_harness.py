"""A delete that races a directory being swapped for a symbolic link (issue 22, class 4).

Layout: ``ws/d`` is a real directory holding ``victim``; ``outside/victim`` lies outside.
A separate process (real parallelism, no GIL) swaps ``ws/d`` in a tight loop: the real
directory moves aside and a link to ``outside`` takes its name, then back. Meanwhile
``delete`` is asked to remove ``d/victim`` again and again; the real ``victim`` is
recreated through a descriptor of the real directory. A *leak* is ``outside/victim``
gone. Used by ``test_safe_open.py`` (bounded, in CI) and ``benchmarks/delete_race.py``
(100,000 iterations, with the safe open and with a plain ``unlink``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

_SWAPPER = """
import os, sys
ws, outside = sys.argv[1], sys.argv[2]
d, aside = os.path.join(ws, "d"), os.path.join(ws, "d_aside")
while True:
    try:
        os.rename(d, aside)
        os.symlink(outside, d)
        os.unlink(d)
        os.rename(aside, d)
    except OSError:
        pass
"""


async def run_delete_race(
    tmp: Path, delete: Callable[[str], Awaitable[None]], iterations: int
) -> tuple[int, int]:
    """Race ``delete("d/victim")`` ``iterations`` times; return (leaks, deletes that went through)."""
    ws, outside = tmp / "ws", tmp / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    real = os.open(ws / "d", os.O_RDONLY | os.O_DIRECTORY)
    leaks = done = 0

    def recreate() -> None:
        os.close(os.open("victim", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=real))

    recreate()
    (outside / "victim").write_text("outside")
    swapper = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(ws), str(outside)])
    try:
        for _ in range(iterations):
            try:
                await delete("d/victim")
                done += 1
            except Exception:  # refused, not found mid-swap: both fine
                pass
            if not (outside / "victim").exists():
                leaks += 1
                (outside / "victim").write_text("outside")
            recreate()
    finally:
        swapper.kill()
        swapper.wait()
        os.close(real)
        with contextlib.suppress(OSError):
            os.unlink(ws / "d") if (ws / "d").is_symlink() else None
    return leaks, done
