"""Finding commands left running by a relay step that was killed (Linux ``/proc``).

Each RUN_COMMAND runs with ``CODELOOP_RELAY_COMMAND=<marker>`` in its environment, the
marker naming session, sequence and command. A step killed with ``kill -9`` cannot stop
its command (it runs in its own process group); the next step finds the processes that
still carry the marker and kills their groups through the runner's
``signal_process_group``. Where ``/proc`` is missing nothing is found (best effort).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from codeloop.environments.runner import signal_process_group

MARKER_VARIABLE = "CODELOOP_RELAY_COMMAND"
"""Environment variable carrying the marker of the command a process belongs to."""


def process_groups_with_marker(marker: str, proc: Path = Path("/proc")) -> set[int]:
    """Process-group ids of live processes whose environment holds the marker."""
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    groups: set[int] = set()
    try:
        entries = list(os.scandir(proc))
    except OSError:
        return groups
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            environ = Path(entry.path, "environ").read_bytes()
            if needle not in environ.split(b"\0"):
                continue
            groups.add(os.getpgid(int(entry.name)))
        except (OSError, ProcessLookupError):
            continue
    groups.discard(os.getpgid(0))
    return groups


def kill_marked(marker: str) -> int:
    """SIGKILL every process group still running the marked command; return how many."""
    groups = process_groups_with_marker(marker)
    for pgid in groups:
        signal_process_group(pgid, signal.SIGKILL)
    return len(groups)
