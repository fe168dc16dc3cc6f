"""``codeloop batch --workers N`` on this machine: a pool of N worker processes (issue 39).

A ``concurrent.futures.ProcessPoolExecutor`` rather than a ``codeloop run`` process per task:
a worker imports codeloop once (the agent, the adapters, rich: most of a ``codeloop run``'s
start-up) and then runs task after task, so a task pays only for its own session. Each task
still runs in a process of its own apart from the batch process, with its own event loop, so
one task's blocking or crashing code cannot stall the others or the results file.

Workers are started with ``spawn`` (the batch process has threads: the progress display) and
die with the batch process, however it dies (``PR_SET_PDEATHSIG``): a batch killed with
SIGKILL leaves no worker running a task on its own, and the restarted batch resumes that task
from its log (each task also holds a lock on its directory while it runs, so even a worker
still winding down cannot run it twice at once). Ctrl-C is the batch process's to handle: the
workers ignore SIGINT.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from codeloop.batch.tasks import TaskSpec

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Worker initializer: SIGKILL when the batch process ends; Ctrl-C is not ours."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the line above took effect
        os.kill(os.getpid(), signal.SIGKILL)


class LocalPool:
    """Runs ``run(task, options, cost_cap)`` in ``workers`` processes of this machine."""

    def __init__(self, run: Callable[..., dict[str, Any]], options: Any, workers: int) -> None:
        self.run, self.options, self.workers = run, options, workers
        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_die_with_parent, initargs=(os.getpid(),))

    @property
    def slots(self) -> int:
        return self.workers

    def submit(self, task: TaskSpec, cost_cap: float | None) -> Future[dict[str, Any]]:
        return self._pool.submit(self.run, task, self.options, cost_cap)

    def wait(self, handles: list[Any], timeout: float) -> list[tuple[Any, dict[str, Any] | BaseException]]:
        """The handles that finished within ``timeout`` seconds, each with its result or error."""
        done, _ = wait(handles, timeout=timeout, return_when=FIRST_COMPLETED)
        out: list[tuple[Any, dict[str, Any] | BaseException]] = []
        for future in done:
            error = future.exception()
            out.append((future, error if error is not None else future.result()))
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
