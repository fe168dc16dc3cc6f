"""Cooperative cancellation for generate()/stream() (unified-llm spec §4.7).

``AbortController().abort()`` may be called from any thread or coroutine; every
operation holding its ``signal`` stops at the next await and raises
:class:`~codeloop.llm.errors.AbortError`. A stream being read is closed, which closes its
HTTP connection.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable
from typing import TypeVar

from codeloop.llm.errors import AbortError

T = TypeVar("T")


class AbortSignal:
    """Read side: check ``aborted`` or await :meth:`wait`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._aborted = False
        self.reason: str | None = None
        """Why the operation was aborted, when the caller said."""
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    @property
    def aborted(self) -> bool:
        """True once ``abort()`` was called."""
        return self._aborted

    def _abort(self, reason: str | None) -> None:
        with self._lock:
            if self._aborted:
                return
            self._aborted = True
            self.reason = reason
            waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            if loop.is_closed():
                continue
            loop.call_soon_threadsafe(event.set)

    def throw_if_aborted(self) -> None:
        """Raise AbortError when aborted."""
        if self._aborted:
            raise AbortError(f"operation aborted{': ' + self.reason if self.reason else ''}")

    async def wait(self) -> None:
        """Return once aborted."""
        event = asyncio.Event()
        with self._lock:
            if self._aborted:
                return
            self._waiters.append((asyncio.get_running_loop(), event))
        await event.wait()


class AbortController:
    """Write side: ``abort()`` cancels everything holding ``signal``."""

    def __init__(self) -> None:
        self.signal = AbortSignal()
        """Pass this to generate()/stream()."""

    def abort(self, reason: str | None = None) -> None:
        """Cancel; safe to call more than once and from any thread."""
        self.signal._abort(reason)


async def abortable(awaitable: Awaitable[T], signal: AbortSignal | None) -> T:
    """Await ``awaitable`` unless ``signal`` fires first, then cancel it and raise AbortError."""
    if signal is None:
        return await awaitable
    if signal.aborted:
        if inspect.iscoroutine(awaitable):
            awaitable.close()  # never started; closing avoids a "never awaited" warning
        signal.throw_if_aborted()
    task = asyncio.ensure_future(awaitable)
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        signal.throw_if_aborted()
    return task.result()
