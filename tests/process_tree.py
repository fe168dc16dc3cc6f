"""Walking a process tree in /proc, for tests that check nothing outlives what started it."""

from __future__ import annotations

import os


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc/PID/task/*/children).

    A process that exits while the tree is walked is skipped: gone, it has nothing left to outlive its parent.
    """
    found: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children") as f:
                    children = {int(c) for c in f.read().split()}
            except OSError:
                continue
            todo += children - found
            found |= children
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except OSError:
        return False
