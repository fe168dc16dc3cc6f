"""Retries of one model call in the loop (issue 23; agent/model_calls.py) over the
ScriptedAdapter: which errors are asked again, how often, and what the host is told."""

from __future__ import annotations

import pytest

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.llm.adapters.scripted import text_response
from codeloop.llm.errors import (
    AccessDeniedError,
    ContextLengthError,
    InvalidRequestError,
    NetworkError,
    NotFoundError,
    QuotaExceededError,
    RateLimitError,
    RequestTimeoutError,
    ServerError,
)

from .agent_harness import calls

FAST = SessionConfig(retry_base_delay=0.001)


async def test_transient_errors_are_retried_with_a_visible_event_each(harness) -> None:
    h = harness("anthropic", [
        RateLimitError("slow down", provider="p", status_code=429, retry_after=0.01),
        ServerError("overloaded", provider="p", status_code=529),
        NetworkError("connection reset"),
        RequestTimeoutError("timed out connecting"),
        text_response("done"),
    ], FAST)
    assert await h.session.submit("x") == "done"
    retries = h.of(ev.Retry)
    assert [(r.attempt, r.max_retries, r.error_type) for r in retries] == [
        (1, 6, "RateLimitError"), (2, 6, "ServerError"), (3, 6, "NetworkError"), (4, 6, "RequestTimeoutError")]
    assert retries[0].wait == 0.01 and retries[0].cause == "rate limited"
    assert retries[1].cause == "provider overloaded (HTTP 529)"
    assert not any(r.discard_deltas for r in retries)
    assert len(h.adapter.requests) == 5
    # One reply in the history: the failed attempts left nothing behind.
    assert h.kinds().count("assistant_text_start") == 1 and h.kinds().count("assistant_text_end") == 1
    assert h.session.end_reason == "completed"


@pytest.mark.parametrize("error", [
    InvalidRequestError("bad", provider="p", status_code=400),
    AccessDeniedError("no", provider="p", status_code=403),
    NotFoundError("no model", provider="p", status_code=404),
    QuotaExceededError("insufficient_quota", provider="p", status_code=429),
])
async def test_client_errors_are_not_retried(harness, error) -> None:
    h = harness("anthropic", [error, text_response("never")], FAST)
    await h.session.submit("x")
    assert len(h.adapter.requests) == 1 and not h.of(ev.Retry)
    assert h.of(ev.ErrorEvent)[0].error_type == type(error).__name__ and h.session.end_reason == "error"


async def test_max_retries_bounds_the_attempts(harness) -> None:
    h = harness("anthropic", [ServerError(str(n), provider="p", status_code=500) for n in range(4)],
                SessionConfig(retry_base_delay=0.001, max_retries=2))
    await h.session.submit("x")
    assert len(h.adapter.requests) == 3 and len(h.of(ev.Retry)) == 2
    assert h.of(ev.ErrorEvent)[0].error_type == "ServerError"


async def test_no_retry_starts_after_the_total_time(harness) -> None:
    h = harness("anthropic", [ServerError("500", provider="p", status_code=500), text_response("never")],
                SessionConfig(retry_max_total=0))
    await h.session.submit("x")
    assert len(h.adapter.requests) == 1 and not h.of(ev.Retry)


async def test_a_retry_after_beyond_the_max_delay_is_reported_not_waited(harness) -> None:
    h = harness("anthropic", [RateLimitError("slow", provider="p", status_code=429, retry_after=600),
                              text_response("never")], SessionConfig(retry_max_delay=60))
    await h.session.submit("x")
    assert len(h.adapter.requests) == 1 and not h.of(ev.Retry)
    warning = h.of(ev.WarningEvent)[-1]
    assert warning.code == "retry_after_too_long" and "600 s" in warning.message and "60 s" in warning.message
    assert h.session.end_reason == "error"


async def test_context_length_is_still_final(harness) -> None:
    h = harness("anthropic", [ContextLengthError("too long", provider="p", status_code=400)], FAST)
    await h.session.submit("x")
    assert len(h.adapter.requests) == 1 and h.of(ev.WarningEvent)[0].code == "context_length"


async def test_a_tool_never_runs_twice_across_retries(harness) -> None:
    h = harness("anthropic", [
        calls("anthropic", ("shell", {"command": "echo ran >> log.txt"})),
        NetworkError("reset"),
        text_response("done"),
    ], FAST)
    await h.session.submit("x")
    assert (h.root / "log.txt").read_text() == "ran\n" and len(h.of(ev.Retry)) == 1


def test_retry_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_retries must be >= 0"):
        SessionConfig(max_retries=-1)


def test_the_cli_default_is_the_session_default() -> None:
    from codeloop.cli.run import DEFAULT_RETRIES

    assert DEFAULT_RETRIES == SessionConfig().max_retries
