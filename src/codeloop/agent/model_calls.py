"""One model call of the loop, retried on transient failures (issue 23; loop spec §9.11,
Appendix B; unified-llm spec §6.3, §6.6).

The adapters and ``Client`` never retry (§6.6); the loop does, per model call, with
:mod:`codeloop.llm.retry`'s backoff and rules:

- what is retried: errors flagged ``retryable`` (429 with its Retry-After or Gemini's
  RetryInfo, 5xx including Anthropic's 529 ``overloaded_error``, connection failures, broken
  streams, bodies that are not JSON) and a timeout, unless part of the reply had already
  arrived (then waiting longer is the fix, not asking again); 400/401/403/404/413, quota and
  content-filter errors never are;
- a Retry-After longer than the policy's ``max_delay`` is not waited out: a ``warning``
  says how long the provider asked for, and the error closes the session as before;
- attempts are bounded by ``SessionConfig.max_retries`` and by ``retry_max_total`` seconds
  since the call began (no retry starts after that); the error that ends them says what
  failed and how many tries were made (``server error (HTTP 502) on each of 7 tries: ...``);
- a stream that breaks after some of its text was shown is asked again from the start: tool
  calls run only once a call has returned its whole :class:`Response`, so nothing of a
  broken call ever reached a tool and no tool runs twice. The ``retry`` event's
  ``discard_deltas`` tells a host to drop the text it showed for this call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.llm.errors import (
    NetworkError,
    ProviderError,
    RateLimitError,
    RequestTimeoutError,
    SDKError,
    ServerError,
    StreamError,
    is_retryable,
)
from codeloop.llm.retry import RetryPolicy
from codeloop.llm.types import Request, Response, StreamEvent, StreamEventType


class ModelClient(Protocol):
    """What a model call needs of :class:`codeloop.llm.client.Client`."""

    async def complete(self, request: Request) -> Response: ...

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]: ...


Emit = Callable[..., None]
"""The session's ``_emit(kind, **data)``."""


def describe_cause(exc: BaseException) -> str:
    """A few words for the terminal: ``rate limited``, ``server error (HTTP 503)``..."""
    status = getattr(exc, "status_code", None)
    if isinstance(exc, RateLimitError):
        return "rate limited"
    if isinstance(exc, ServerError):
        return f"provider overloaded (HTTP {status})" if status == 529 else f"server error (HTTP {status})"
    if isinstance(exc, StreamError):
        return "the reply stream broke"
    if isinstance(exc, NetworkError):
        return "connection failed"
    if isinstance(exc, RequestTimeoutError):
        return "timed out"
    return f"provider error (HTTP {status})" if status else "provider error"


async def call_model(client: ModelClient, request: Request, *, stream: bool, config: SessionConfig,
                     emit: Emit) -> Response:
    """The model's reply to ``request``, retried per ``config``; the last error propagates.

    The loop is :func:`codeloop.llm.retry.retry`'s, inlined: a call that succeeds at once (the
    hot path of every round) builds no policy and no closures."""
    started = time.monotonic()
    progress = [False, False]
    """Whether text of the current attempt was already emitted as deltas / any event arrived."""
    attempt = 0
    while True:
        progress[0] = progress[1] = False
        try:
            if not stream:
                return await client.complete(request)
            return await _streamed(client, request, emit, progress)
        except SDKError as exc:
            delay = None
            # A timeout is final in the SDK (§6.3); before any byte, asking again is what a user would do.
            if attempt < config.max_retries and time.monotonic() - started < config.retry_max_total and (
                    is_retryable(exc) or (isinstance(exc, RequestTimeoutError) and not progress[1])):
                policy = RetryPolicy(base_delay=config.retry_base_delay, max_delay=config.retry_max_delay)
                delay = policy.delay(attempt, getattr(exc, "retry_after", None))
            if delay is None:
                if isinstance(exc, ProviderError):
                    _report_long_wait(exc, config, emit)
                if attempt:  # the message, not the type: callers still tell errors apart by type
                    exc.message = f"{describe_cause(exc)} on each of {attempt + 1} tries: {exc.message}"
                    exc.args = (exc.message,)
                raise
            emit(ev.Retry, attempt=attempt + 1, max_retries=config.max_retries, wait=round(delay, 3),
                 cause=describe_cause(exc), error_type=type(exc).__name__, message=str(exc),
                 discard_deltas=progress[0])
            await asyncio.sleep(delay)
            attempt += 1


async def _streamed(client: ModelClient, request: Request, emit: Emit, progress: list[bool]) -> Response:
    response: Response | None = None
    events = client.stream(request)
    try:
        async for event in events:
            progress[1] = True
            if event.type == StreamEventType.TEXT_DELTA and event.delta:
                progress[0] = True
                emit(ev.AssistantTextDelta, delta=event.delta)
            elif event.type == StreamEventType.FINISH:
                response = event.response
            elif event.type == StreamEventType.ERROR and event.error is not None:
                raise event.error
    finally:
        # Left early (an error, or ``emit`` raising to stop a draft whose rest is not wanted): the
        # connection closes now, and a local server stops generating, not when the stream is collected.
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
    if response is None:
        raise StreamError("the model's stream ended without a final response")
    return response


def _report_long_wait(exc: ProviderError, config: SessionConfig, emit: Emit) -> None:
    wait = exc.retry_after
    if exc.retryable and wait is not None and wait > config.retry_max_delay:
        emit(ev.WarningEvent, code="retry_after_too_long",
             message=f"{describe_cause(exc)}: the provider asks to wait {wait:g} s, longer than the "
                     f"{config.retry_max_delay:g} s codeloop waits; not retrying (try again later)")
