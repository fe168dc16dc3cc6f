"""The batch process's loop (issue 39): tasks out to an executor, results into one file.

The executor (:class:`~codeloop.batch.pool.LocalPool` or
:class:`~codeloop.batch.ray_cluster.RayCluster`) runs each task; this loop only keeps
``slots`` tasks in flight, appends each finished one to the results file as it arrives, and
shares a total ``--max-cost`` out: a task starts with a cap of what is left (the limit, less
what finished tasks cost and what running tasks may still spend) divided by the free slots,
so the tasks together can never spend more than the limit. A task paused by that cap is not
finished: it is not recorded, and a run with a higher ``--max-cost`` resumes it.

A task lost by the executor (a pool worker killed, a task lost on more Ray nodes than its
retries allow) is not recorded either: the next run resumes it from its session log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from codeloop.batch.results import ResultsWriter
from codeloop.batch.tasks import TaskSpec

WAIT_SECONDS = 0.5
"""How long one wait for a finished task lasts before the display is refreshed."""


class Executor(Protocol):
    """Runs tasks somewhere (a local pool, a Ray cluster)."""

    @property
    def slots(self) -> int:
        """How many tasks run at once."""

    def submit(self, task: TaskSpec, cost_cap: float | None) -> Any:
        """Start ``task``; a handle for :meth:`wait`."""

    def wait(self, handles: list[Any], timeout: float) -> list[tuple[Any, dict[str, Any] | BaseException]]:
        """Handles finished within ``timeout`` seconds, each with its result or the error that lost it."""

    def close(self) -> None: ...


@dataclass
class Tally:
    """What the batch has done so far (for the display and the exit code)."""

    total: int
    done: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    """Tasks the executor lost (not recorded; the next run resumes them)."""
    paused: list[str] = field(default_factory=list)
    """Tasks stopped by the batch's ``--max-cost`` (not recorded)."""
    not_started: int = 0
    """Tasks never started: the batch's ``--max-cost`` was spent."""
    cost: float = 0.0


Event = Callable[[str, dict[str, Any]], None]


def run_tasks(tasks: list[TaskSpec], executor: Executor, results: ResultsWriter, tally: Tally,
              emit: Event, max_cost: float | None = None) -> None:
    """Run every task of ``tasks`` through ``executor``, appending results as they finish."""
    queue = list(reversed(tasks))
    running: dict[Any, tuple[TaskSpec, float | None]] = {}
    while queue or running:
        while queue and len(running) < executor.slots:
            cap = None
            if max_cost is not None:
                committed = tally.cost + sum(c or 0.0 for _, c in running.values())
                left = max_cost - committed
                if left <= 0:
                    break
                cap = left / (executor.slots - len(running))
            task = queue.pop()
            running[executor.submit(task, cap)] = (task, cap)
            emit("task_started", {"id": task.id, "cost_cap": cap})
        if not running:
            tally.not_started = len(queue)
            break
        for handle, outcome in executor.wait(list(running), WAIT_SECONDS):
            task, cap = running.pop(handle)
            if isinstance(outcome, BaseException):
                tally.lost.append(task.id)
                emit("task_lost", {"id": task.id, "error": f"{type(outcome).__name__}: {outcome}"})
                continue
            cost = outcome.get("cost_usd") or 0.0
            tally.cost += cost
            own = task.limits.max_cost
            if outcome.get("status") == "budget" and cap is not None and (own is None or cap < own):
                tally.paused.append(task.id)
                emit("task_paused", {"id": task.id, "cost_usd": cost})
                continue
            results.append(outcome)
            tally.done += 1
            status = str(outcome.get("status"))
            tally.statuses[status] = tally.statuses.get(status, 0) + 1
            emit("task_finished", {k: outcome.get(k) for k in ("id", "status", "cost_usd", "seconds")}
                 | {"passed": (outcome.get("check") or {}).get("passed")})
        emit("tick", {})
