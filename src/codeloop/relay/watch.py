"""``relay watch``: wait for replies in the inbox and step each one as it arrives.

Uses ``watchfiles`` on the inbox directory, and also looks every second in case an
event was missed (network file systems, editors that rename), or a held command was
answered through the approvals store (issue 34). A file is stepped once
its size and modification time have stopped changing, so a reply still being saved is
not read half-written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from watchfiles import awatch

from codeloop.relay.config import RelayConfig
from codeloop.relay.engine import StepReport, pending_replies, step, waiting_for_answer
from codeloop.relay.progress import EventSink

SETTLE_S = 0.3
"""A reply must stay unchanged this long before it is read."""


Snapshot = list[tuple[str, int, int]]


def _snapshot(config: RelayConfig) -> Snapshot:
    out = []
    for path in pending_replies(config):
        try:
            info = path.stat()
        except OSError:
            continue
        out.append((path.name, info.st_size, info.st_mtime_ns))
    return out


async def _settled(config: RelayConfig) -> Snapshot | None:
    """The pending replies once they stopped changing for ``SETTLE_S``; None if none."""
    before = _snapshot(config)
    if not before:
        return None
    await asyncio.sleep(SETTLE_S)
    return before if _snapshot(config) == before else None


def _answered(last: StepReport | None) -> bool:
    """True when the last step stopped at a held command that has been answered since (from
    any shell, through the approvals store): the next step finishes its reply."""
    return last is not None and last.session.held is not None and waiting_for_answer(last.session) is None


async def watch(config: RelayConfig, session_id: str | None, on_event: EventSink,
                on_step: Callable[[StepReport], Awaitable[None]],
                stop: asyncio.Event | None = None) -> StepReport | None:
    """Step whenever replies arrive, until the session completes or ``stop`` is set.

    Returns the last step's report (None if nothing was stepped). Raises
    :class:`~codeloop.relay.engine.RelayError` like :func:`step`.
    """
    stop = stop or asyncio.Event()
    config.ensure_dirs()
    last: StepReport | None = None
    # Files left after a step (empty, or not UTF-8) are retried only once they change.
    left_over: Snapshot = []
    async for _changes in awatch(config.inbox_dir, stop_event=stop, recursive=False, debounce=300, step=50,
                                 rust_timeout=1000, yield_on_timeout=True):
        ready = await _settled(config)
        if (ready is None or ready == left_over) and not _answered(last):
            continue
        last = await step(config, session_id, on_event)
        left_over = _snapshot(config)
        if last.replies or last.blocked or last.session.held is not None:
            await on_step(last)
        if last.session.is_complete:
            break
        session_id = last.session.session_id
    return last
