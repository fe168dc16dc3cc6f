"""Retry with exponential backoff and jitter (unified-llm spec §6.6).

Layer 2: ``Client.complete()``/``stream()`` never retry; the high-level functions wrap
each LLM call in :func:`retry` (or :func:`retry_stream`), and applications may too.

Rules:
- Only errors with ``retryable`` set are retried (``should_retry`` can widen or narrow).
- Delay for attempt n (0-based) is ``min(base_delay * multiplier**n, max_delay)``, times a
  random factor in [0.5, 1.5) when ``jitter``.
- A ``retry_after`` from the provider replaces the computed delay when it is at most
  ``max_delay``; when it is larger the error is raised at once, ``retry_after`` set, so a
  caller never waits minutes silently.
- A stream is retried only until its first event has been yielded; after that a failure
  propagates (the consumer has seen partial data).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from codeloop.llm.errors import SDKError, is_retryable

T = TypeVar("T")

OnRetry = Callable[[BaseException, int, float], None]
"""Called before each retry with (error, attempt number starting at 0, delay in seconds)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How transient failures are retried (§6.6)."""

    max_retries: int = 2
    """Retries after the first attempt; 0 disables retrying."""
    base_delay: float = 1.0
    """Delay before the first retry, in seconds."""
    max_delay: float = 60.0
    """Cap on any delay; a longer Retry-After makes the error final."""
    backoff_multiplier: float = 2.0
    """Growth factor between retries."""
    jitter: bool = True
    """Multiply each delay by a random factor in [0.5, 1.5)."""
    on_retry: OnRetry | None = None
    """Observer called before each retry."""
    should_retry: Callable[[BaseException], bool] | None = None
    """Overrides the ``retryable`` flag when set (e.g. to retry timeouts)."""

    def delay(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float | None:
        """Seconds to wait before retry ``attempt``, or None when the Retry-After is too long."""
        if retry_after is not None:
            return retry_after if retry_after <= self.max_delay else None
        delay = min(self.base_delay * self.backoff_multiplier**attempt, self.max_delay)
        if self.jitter:
            delay *= (rng or random).uniform(0.5, 1.5)
        return delay

    def _decide(self, exc: BaseException, attempt: int) -> float | None:
        """Delay before retrying after ``exc`` (``on_retry`` told), or None to give up."""
        if attempt >= self.max_retries:
            return None
        allowed = self.should_retry(exc) if self.should_retry is not None else is_retryable(exc)
        delay = self.delay(attempt, getattr(exc, "retry_after", None)) if allowed else None
        if delay is not None and self.on_retry is not None:
            self.on_retry(exc, attempt, delay)
        return delay


Sleep = Callable[[float], Awaitable[None]]


async def retry(
    call: Callable[[], Awaitable[T]], policy: RetryPolicy | None = None, *, sleep: Sleep = asyncio.sleep
) -> T:
    """Await ``call()`` and retry it per ``policy``; the last error propagates unchanged."""
    policy = policy or RetryPolicy()
    attempt = 0
    while True:
        try:
            return await call()
        except SDKError as exc:
            delay = policy._decide(exc, attempt)
            if delay is None:
                raise
            await sleep(delay)
            attempt += 1


async def retry_stream(
    open_stream: Callable[[], AsyncIterator[T]], policy: RetryPolicy | None = None, *,
    sleep: Sleep = asyncio.sleep,
) -> AsyncGenerator[T, None]:
    """Yield from ``open_stream()``, reopening it on a retryable failure before the first item.

    Once an item has been yielded, errors propagate: partial data is never replayed (§6.6).
    """
    policy = policy or RetryPolicy()
    attempt = 0
    while True:
        started = False
        stream = open_stream()
        try:
            async for item in stream:
                started = True
                yield item
            return
        except SDKError as exc:
            delay = None if started else policy._decide(exc, attempt)
            if delay is None:
                raise
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        await sleep(delay)
        attempt += 1
