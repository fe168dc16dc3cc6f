"""Which paths changed since the last snapshot, from file system events (issue 35).

A :class:`ChangeWatcher` runs the ``watchfiles`` watcher (the Rust ``notify`` crate: inotify
on Linux) over the workspace and a private directory beside codeloop's snapshot repository,
in a thread that gathers the changed paths. :meth:`ChangeWatcher.take` makes the changes a
command caused arrive first: it creates a sentinel file in the private directory and waits
for its event — one inotify queue delivers events in order, so every event before the
sentinel's has been gathered — then hands over the paths gathered and starts afresh.

It answers None ("scan everything") whenever an event may have been lost: the sentinel's
event did not come in time, the watcher failed (no inotify watch left, a path it cannot
decode), or more distinct changes gathered than ``limit`` (the kernel queue holds
``fs.inotify.max_queued_events``, 16,384 by default, and on overflow ``watchfiles`` drops the
notice without a path: a burst that large is treated as an overflow). A snapshot then
scans the whole workspace, so a lost event costs time, never a wrong snapshot.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from pathlib import Path
from typing import Any

DEFAULT_LIMIT = 4096
"""Distinct changes gathered beyond which events count as possibly lost (a full scan)."""

SENTINEL_WAIT_S = 5.0
"""How long :meth:`ChangeWatcher.take` waits for the sentinel's event before scanning everything."""


class ChangeWatcher:
    """The paths changed under ``workspace`` since the last :meth:`take`."""

    def __init__(self, workspace: Path, private: Path, *, limit: int = DEFAULT_LIMIT) -> None:
        from watchfiles._rust_notify import RustNotify

        self.workspace = Path(os.path.realpath(workspace))
        self.private = Path(os.path.realpath(private))
        self.private.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.limit = limit
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._seen: set[str] = set()
        self._lost = False
        self._dead = False
        self._names = itertools.count()
        self._stop = threading.Event()
        self._notify: Any = RustNotify([str(self.workspace), str(self.private)], False, False, 300, True, False)
        self._thread = threading.Thread(target=self._run, name="codeloop-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        prefix = str(self.private) + os.sep
        while not self._stop.is_set():
            try:
                # 2 ms steps, batches closed after 10 ms: take() waits about that long.
                got = self._notify.watch(10, 2, 500, self._stop)
            except Exception:  # the watcher broke: every later take() scans everything
                with self._cond:
                    self._dead = True
                    self._cond.notify_all()
                return
            if isinstance(got, str):  # "timeout", "stop" or "signal"
                continue
            with self._cond:
                for _change, path in got:
                    if path.startswith(prefix):
                        self._seen.add(path[len(prefix):])
                    else:
                        self._pending.add(path)
                if len(self._pending) > self.limit:
                    self._lost = True
                    self._pending.clear()
                self._cond.notify_all()

    def lose(self) -> None:
        """Count the events so far as lost (the next :meth:`take` answers None)."""
        with self._cond:
            self._lost = True

    def take(self, wait: float = SENTINEL_WAIT_S) -> set[str] | None:
        """Absolute paths changed since the last call; None: scan everything."""
        name = f"sentinel-{os.getpid()}-{next(self._names)}"
        sentinel = self.private / name
        try:
            sentinel.write_bytes(b"")
        except OSError:
            return None
        try:
            with self._cond:
                arrived = self._cond.wait_for(lambda: name in self._seen or self._dead, wait)
                self._seen.discard(name)
                answer = None if (not arrived or self._dead or self._lost) else set(self._pending)
                self._pending.clear()
                self._lost = False
                return answer
        finally:
            with contextlib.suppress(OSError):
                sentinel.unlink()

    def close(self) -> None:
        """Stop watching (idempotent)."""
        self._stop.set()
        self._thread.join(timeout=5)
        with contextlib.suppress(Exception):
            self._notify.close()
