"""Races against a directory being swapped for a symbolic link (issue 22, class 4).

Layout: ``ws/d`` is a real directory; ``outside`` lies outside the workspace. A separate
process (real parallelism, no GIL) swaps ``ws/d`` in a tight loop: the real directory
moves aside and a link to ``outside`` takes its name, then back. Meanwhile a tool is
asked about ``d/<name>`` again and again, so a tool that checks the path and then uses
the path string (instead of what it checked) ends up in ``outside``.

- ``run_delete_race``: ``delete("d/victim")``; the real ``victim`` is recreated through a
  descriptor of the real directory. A *leak* is ``outside/victim`` gone.
- ``run_grep_race``: ``grep(pattern, "d/f.txt")``, the explicit-path case; ``d/f.txt``
  holds a harmless line, ``outside/f.txt`` a SECRET one. A *leak* is a result showing
  the SECRET. Here the swapper lingers in each state (``GREP_DWELL``).

Used by ``test_safe_open.py`` (bounded, in CI) and ``benchmarks/delete_race.py``
(100,000 iterations, with the safe tool and with the code before the fix).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

SECRET = "RACE-SECRET-OUTSIDE"
HARMLESS = "harmless line inside"
# Swapping as fast as it can, ``d`` is a real directory for microseconds, so few greps get
# past the resolver and the old code leaked 1-3 times in 3,000 tries: too few for a bounded
# test to catch a regression. Staying a directory up to 1 ms and a link up to 0.2 ms lets
# most checks pass and still swaps during ``rg``'s start (about 20 leaks in 3,000).
GREP_DWELL = (0.0002, 0.001)

_SWAPPER = """
import os, random, sys, time
ws, outside = sys.argv[1], sys.argv[2]
as_link, as_dir = float(sys.argv[3]), float(sys.argv[4])
d, aside = os.path.join(ws, "d"), os.path.join(ws, "d_aside")
def hold(dwell):
    end = time.perf_counter() + random.random() * dwell
    while time.perf_counter() < end:
        pass
while True:
    try:
        os.rename(d, aside)
        os.symlink(outside, d)
        if as_link:
            hold(as_link)
        os.unlink(d)
        os.rename(aside, d)
        if as_dir:
            hold(as_dir)
    except OSError:
        pass
"""


@contextlib.contextmanager
def _swapping(ws: Path, outside: Path, dwell: tuple[float, float] = (0.0, 0.0)) -> Iterator[None]:
    """Swap ``ws/d`` for a link to ``outside`` and back, in another process, while inside.
    ``dwell``: the longest (random) time in seconds ``d`` stays a link, and a directory;
    0 swaps on at once."""
    swapper = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(ws), str(outside), *map(str, dwell)])
    try:
        yield
    finally:
        swapper.kill()
        swapper.wait()
        with contextlib.suppress(OSError):
            os.unlink(ws / "d") if (ws / "d").is_symlink() else None


def _layout(tmp: Path) -> tuple[Path, Path]:
    ws, outside = tmp / "ws", tmp / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    return ws, outside


async def run_delete_race(
    tmp: Path, delete: Callable[[str], Awaitable[None]], iterations: int
) -> tuple[int, int]:
    """Race ``delete("d/victim")`` ``iterations`` times; return (leaks, deletes that went through)."""
    ws, outside = _layout(tmp)
    real = os.open(ws / "d", os.O_RDONLY | os.O_DIRECTORY)
    leaks = done = 0

    def recreate() -> None:
        os.close(os.open("victim", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=real))

    recreate()
    (outside / "victim").write_text("outside")
    try:
        with _swapping(ws, outside):
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
        os.close(real)
    return leaks, done


async def run_grep_race(
    tmp: Path, grep: Callable[[str, str], Awaitable[str]], iterations: int,
    progress: Callable[[int, int, int], None] | None = None, dwell: tuple[float, float] = GREP_DWELL,
) -> tuple[int, int]:
    """Race ``grep("line", "d/f.txt")`` ``iterations`` times; return (leaks, searches that
    showed the harmless line). ``progress(tries, leaks, shown)`` is called every 1,000 tries."""
    ws, outside = _layout(tmp)
    (ws / "d" / "f.txt").write_text(f"{HARMLESS}\n")
    (outside / "f.txt").write_text(f"{SECRET} line\n")
    leaks = shown = 0
    with _swapping(ws, outside, dwell):
        for tries in range(1, iterations + 1):
            try:
                output = await grep("line", "d/f.txt")
            except Exception:  # refused, not found mid-swap: both fine
                output = ""
            leaks += SECRET in output
            shown += HARMLESS in output
            if progress is not None and tries % 1000 == 0:
                progress(tries, leaks, shown)
    return leaks, shown
