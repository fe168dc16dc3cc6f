"""A task's session log, mirrored to a store the batch owns while the task runs (issue 39).

On a Ray cluster each node has its own state directory, so a task retried on another node
(its first node lost) would not find its session log there. The worker therefore sends the
log's new complete lines, and the workspace's patch at that point, to a store owned by the
batch process (:class:`LogStore`; on Ray, an actor on the batch process's node that writes
them to the batch's directory) every :data:`MIRROR_PERIOD` seconds and once more at the end.
A retried task starts from what the store holds: the log up to the last line sent and the
workspace as the patch left it, so at most the last period's steps run again. Nothing
depends on a disk being shared.

Only whole lines are sent (a line the session is still writing waits for the next round),
and each push names the byte offset it starts at, so a repeated push is harmless.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

MIRROR_PERIOD = 0.5
"""Seconds between two pushes of a running task."""


@dataclass(frozen=True)
class MirroredLog:
    """What the store holds of one task."""

    name: str
    """The log's file name (``<session id>.jsonl``)."""
    data: bytes
    """The log's complete lines, from its start."""
    patch: str
    """The workspace's patch when the last line was sent."""


class LogStore(Protocol):
    """Where a task's log goes while it runs (the batch process owns it)."""

    def push(self, task_id: str, name: str, offset: int, data: bytes, patch: str) -> None:
        """Store ``data`` at byte ``offset`` of ``task_id``'s log ``name`` (what follows it is
        dropped), and the workspace's ``patch``."""

    def restore(self, task_id: str) -> MirroredLog | None:
        """What was stored of ``task_id``; None when nothing was."""


class LogMirror:
    """A thread sending a running task's log to a :class:`LogStore`; :meth:`stop` sends the
    rest and ends it. ``patch`` reads the workspace's patch (called from this thread)."""

    def __init__(self, task_id: str, sessions: Path, store: LogStore, patch: Callable[[], str],
                 period: float = MIRROR_PERIOD) -> None:
        self.task_id, self.sessions, self.store, self.patch, self.period = task_id, sessions, store, patch, period
        self.sent = 0
        self.name: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"log-mirror-{task_id}", daemon=True)

    def start(self, restored: MirroredLog | None) -> None:
        if restored is not None:
            self.name, self.sent = restored.name, len(restored.data)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.push()

    def push(self) -> None:
        """Send the log's complete lines not sent yet (with the patch), if there are any."""
        logs = sorted(self.sessions.glob("*.jsonl")) if self.sessions.is_dir() else []
        if not logs:
            return
        path = logs[0]
        try:
            with open(path, "rb") as handle:
                handle.seek(self.sent)
                new = handle.read()
        except OSError:
            return
        whole = new[: new.rfind(b"\n") + 1]
        if not whole:
            return
        self.store.push(self.task_id, path.name, self.sent, whole, self.patch())
        self.name = path.name
        self.sent += len(whole)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.push()
