"""Retry policy of unified-llm spec §6.6."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from codeloop.llm.errors import (
    AuthenticationError,
    NetworkError,
    RateLimitError,
    RequestTimeoutError,
    ServerError,
    StreamError,
)
from codeloop.llm.retry import RetryPolicy, retry, retry_stream


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def failing(errors: list[Exception], result: str = "ok"):  # type: ignore[no-untyped-def]
    calls = {"n": 0}

    async def call() -> str:
        calls["n"] += 1
        if errors:
            raise errors.pop(0)
        return result

    return call, calls


def test_6_6_backoff_without_jitter_doubles_and_caps() -> None:
    policy = RetryPolicy(base_delay=1.0, backoff_multiplier=2.0, max_delay=10.0, jitter=False)
    assert [policy.delay(n) for n in range(5)] == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_6_6_jitter_stays_within_half_to_one_and_a_half() -> None:
    policy = RetryPolicy(base_delay=2.0)
    rng = random.Random(1)
    delays = [policy.delay(1, rng=rng) for _ in range(200)]
    assert all(2.0 <= d < 6.0 for d in delays)
    assert max(delays) - min(delays) > 1.0


async def test_6_6_retries_retryable_errors_then_succeeds() -> None:
    sleeps = Sleeps()
    seen: list[tuple[str, int, float]] = []
    call, calls = failing([ServerError("500", provider="p"), NetworkError("reset")])
    policy = RetryPolicy(jitter=False, on_retry=lambda e, n, d: seen.append((type(e).__name__, n, d)))
    assert await retry(call, policy, sleep=sleeps) == "ok"
    assert calls["n"] == 3
    assert sleeps.delays == [1.0, 2.0]
    assert seen == [("ServerError", 0, 1.0), ("NetworkError", 1, 2.0)]


async def test_6_6_gives_up_after_max_retries_with_last_error() -> None:
    sleeps = Sleeps()
    last = ServerError("third", provider="p")
    call, calls = failing([ServerError("1", provider="p"), ServerError("2", provider="p"), last])
    with pytest.raises(ServerError) as info:
        await retry(call, RetryPolicy(max_retries=2, jitter=False), sleep=sleeps)
    assert info.value is last and calls["n"] == 3


async def test_6_6_non_retryable_errors_raise_at_once() -> None:
    sleeps = Sleeps()
    call, calls = failing([AuthenticationError("bad key", provider="p")])
    with pytest.raises(AuthenticationError):
        await retry(call, RetryPolicy(), sleep=sleeps)
    assert calls["n"] == 1 and sleeps.delays == []


async def test_6_6_max_retries_zero_disables_retry() -> None:
    call, calls = failing([ServerError("x", provider="p")])
    with pytest.raises(ServerError):
        await retry(call, RetryPolicy(max_retries=0), sleep=Sleeps())
    assert calls["n"] == 1


async def test_6_6_retry_after_replaces_backoff() -> None:
    sleeps = Sleeps()
    call, _ = failing([RateLimitError("slow", provider="p", retry_after=3.5)])
    assert await retry(call, RetryPolicy(), sleep=sleeps) == "ok"
    assert sleeps.delays == [3.5]


async def test_6_6_retry_after_beyond_max_delay_raises_immediately() -> None:
    sleeps = Sleeps()
    call, calls = failing([RateLimitError("slow", provider="p", retry_after=600.0)])
    with pytest.raises(RateLimitError) as info:
        await retry(call, RetryPolicy(max_delay=60.0), sleep=sleeps)
    assert info.value.retry_after == 600.0 and calls["n"] == 1 and sleeps.delays == []


async def test_6_3_should_retry_can_opt_in_timeouts() -> None:
    call, calls = failing([RequestTimeoutError("slow")])
    policy = RetryPolicy(should_retry=lambda e: isinstance(e, RequestTimeoutError), jitter=False)
    assert await retry(call, policy, sleep=Sleeps()) == "ok"
    assert calls["n"] == 2


async def test_6_6_stream_is_retried_before_first_event_only() -> None:
    opened = {"n": 0}

    async def flaky() -> AsyncIterator[int]:
        opened["n"] += 1
        if opened["n"] == 1:
            raise NetworkError("refused")
        yield 1
        yield 2
        raise StreamError("cut mid-way")

    got: list[int] = []
    with pytest.raises(StreamError, match="cut mid-way"):
        async for item in retry_stream(flaky, RetryPolicy(jitter=False), sleep=Sleeps()):
            got.append(item)
    assert got == [1, 2]
    assert opened["n"] == 2
