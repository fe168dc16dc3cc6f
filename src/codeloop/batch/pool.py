"""``codeloop batch --workers N`` on this machine: a pool of N worker processes (issue 39).

A ``concurrent.futures.ProcessPoolExecutor`` rather than a ``codeloop run`` process per task:
a worker imports codeloop once (the agent, the adapters, rich: most of a ``codeloop run``'s
start-up) and then runs task after task, so a task pays only for its own session. Each task
still runs in a process of its own apart from the batch process, with its own event loop, so
one task's blocking or crashing code cannot stall the others or the results file.

Workers are forked from a ``forkserver`` that imported the session machinery once (never
from the batch process itself, which has threads: the progress display), so N workers cost
one import, not N. They die with the batch process, however it dies: each worker watches
the batch process through a pidfd and kills itself when it ends (the forkserver exits on its
own once the batch process is gone). So a batch killed with SIGKILL leaves no worker running
a task on its own, and the restarted batch resumes that task
from its log (each task also holds a lock on its directory while it runs, so even a worker
still winding down cannot run it twice at once). Ctrl-C is the batch process's to handle: the
workers ignore SIGINT.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import signal
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from codeloop.batch.tasks import TaskSpec

PRELOAD = ["codeloop.cli.batch_task", "codeloop.cli.run", "codeloop.agent.session", "codeloop.sessions",
           "codeloop.profiles", "codeloop.llm.client", "codeloop.tools.call_path", "rich.console"]
"""What the forkserver imports once for every worker (what a task's session imports anyway)."""


def _die_with_parent(batch: int) -> None:
    """Worker initializer: SIGKILL this worker when the batch process ends, however it ends
    (a thread waits on a pidfd of it: the worker's parent is the forkserver, so
    ``PR_SET_PDEATHSIG`` alone would wait for that); Ctrl-C is the batch process's."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        watched = os.pidfd_open(batch)
    except ProcessLookupError:  # gone already
        os.kill(os.getpid(), signal.SIGKILL)
        return

    def watch() -> None:
        select.select([watched], [], [])  # readable once the process has ended
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="batch-watch", daemon=True).start()


class LocalPool:
    """Runs ``run(task, options, cost_cap)`` in ``workers`` processes of this machine."""

    def __init__(self, run: Callable[..., dict[str, Any]], options: Any, workers: int) -> None:
        self.run, self.options, self.workers = run, options, workers
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        self._pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_die_with_parent,
                                         initargs=(os.getpid(),))

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
