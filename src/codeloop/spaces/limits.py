"""Per-space limits on a run: its operations' wall time and how many operations it processes (issue 36).

A space's policy configuration may hold ``"limits": {"maxRunTime": ms, "maxOperations": n}``.
Both count per run, across its pauses and resumes: ``maxRunTime`` is the wall time spent
executing the run's operations (time paused for approval does not count), ``maxOperations`` how
many entries of the operations list were processed, whatever their outcome.

The check comes *before* each operation starts, so a run never starts one operation over; an
operation still running when ``maxRunTime`` passes is cancelled (its process group is killed).
The stop is an ``error`` event whose ``details.code`` is ``budgetExceeded``; the run's state is
``limit_reached`` (wire status ``error``) and ``POST /v1/runs/{id}/resume`` with an empty body
continues it once the space's policy raises the limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from codeloop.spaces import operations as wire

BUDGET_EXCEEDED = "budgetExceeded"
"""``details.code`` of the error event that stops a run at a limit."""
LIMIT_REACHED: Final = "limit_reached"
"""The run state after such a stop (resumable once the limit is raised)."""


@dataclass(frozen=True)
class RunLimits:
    """The limits of one space's runs; ``None`` is no limit."""

    max_run_time_ms: int | None = None
    max_operations: int | None = None

    @property
    def any(self) -> bool:
        return self.max_run_time_ms is not None or self.max_operations is not None


NO_LIMITS = RunLimits()


def exceeded(limits: RunLimits, operations_done: int, run_time_ms: float) -> Literal["maxOperations",
                                                                                    "maxRunTime"] | None:
    """The limit that forbids starting another operation, if any."""
    if limits.max_operations is not None and operations_done >= limits.max_operations:
        return "maxOperations"
    if limits.max_run_time_ms is not None and run_time_ms >= limits.max_run_time_ms:
        return "maxRunTime"
    return None


def budget_event(limits: RunLimits, which: Literal["maxOperations", "maxRunTime"], operations_done: int,
                 run_time_ms: float, *, timestamp: str, cancelled: str | None = None) -> wire.ErrorEvent:
    """The event that stops a run at ``which``; ``cancelled`` names an operation cut short."""
    used_ms = int(run_time_ms)
    if which == "maxOperations":
        message = (f"operation limit reached: {operations_done} of at most {limits.max_operations} operations "
                   "of this run were processed; raise the space's limits.maxOperations and resume the run "
                   "to go on")
        used: int = operations_done
        limit = limits.max_operations
    else:
        cut = (f"operation {cancelled} was cancelled (it may have run partly) and is not run again; "
               if cancelled else "")
        message = (f"run time limit reached: the operations of this run took {used_ms} ms of at most "
                   f"{limits.max_run_time_ms} ms; {cut}raise the space's limits.maxRunTime and resume the "
                   "run to go on")
        used = used_ms
        limit = limits.max_run_time_ms
    return wire.ErrorEvent(timestamp=timestamp, operationId=cancelled,
                           category="timeout" if which == "maxRunTime" else "execution", message=message,
                           details={"code": BUDGET_EXCEEDED, "limit": which, "used": used, "max": limit,
                                    "operationsDone": operations_done, "runTimeMs": used_ms})
