"""Finding commands left running by a relay step that was killed (Linux ``/proc``).

Each RUN_COMMAND runs with ``CODELOOP_RELAY_COMMAND=<marker>`` in its environment, the
marker naming session, sequence and command. A step killed with ``kill -9`` cannot stop
its command (it runs in its own process group); the next step finds the processes that
still carry the marker and kills their groups through the runner's
``kill_groups_with``. Where ``/proc`` is missing nothing is found (best effort).
"""

from __future__ import annotations

from pathlib import Path

from codeloop.environments.runner import kill_groups_with, process_groups_with

MARKER_VARIABLE = "CODELOOP_RELAY_COMMAND"
"""Environment variable carrying the marker of the command a process belongs to."""


def process_groups_with_marker(marker: str, proc: Path = Path("/proc")) -> set[int]:
    """Process-group ids of live processes whose environment holds the marker."""
    return process_groups_with(MARKER_VARIABLE, marker, proc)


def kill_marked(marker: str) -> int:
    """SIGKILL every process group still running the marked command; return how many."""
    return kill_groups_with(MARKER_VARIABLE, marker)
