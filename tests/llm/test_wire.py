"""HTTP answers → SDK values (adapters/flow.py): error bodies, JSON decoding, rate-limit headers, Retry-After."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.llm import errors as E
from codeloop.llm.adapters.flow import (
    decode_json_body,
    decode_json_event,
    error_from_response,
    error_from_transport,
    rate_limit_from_headers,
)


def response(status: int, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, content=body, headers=headers, request=httpx.Request("POST", "http://x/v1"))


@pytest.mark.parametrize(
    ("body", "message", "code"),
    [
        # OpenAI / llama.cpp
        ({"error": {"message": "bad model", "type": "invalid_request_error", "code": "model_not_found"}},
         "bad model", "model_not_found"),
        # Anthropic
        ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "Overloaded",
         "overloaded_error"),
        # Gemini (sometimes wrapped in a list)
        ([{"error": {"code": 404, "message": "models/x is not found", "status": "NOT_FOUND"}}],
         "models/x is not found", None),
        ({"detail": "Not Found"}, "Not Found", None),
    ],
)
def test_7_6_error_body_shapes(body: object, message: str, code: str | None) -> None:
    err = error_from_response("p", response(404, json.dumps(body).encode()))
    assert message in err.message
    assert getattr(err, "error_code", None) == code


def test_7_6_gemini_grpc_status_used_for_unlisted_http_status() -> None:
    body = {"error": {"code": 499, "message": "cancelled upstream", "status": "UNAVAILABLE"}}
    assert type(error_from_response("gemini", response(499, json.dumps(body).encode()))) is E.ServerError


@given(st.integers(min_value=400, max_value=599), st.binary(max_size=300), st.text(max_size=20))
def test_error_from_response_never_raises_on_any_body(status: int, body: bytes, retry_after: str) -> None:
    headers = {"retry-after": retry_after} if retry_after.isprintable() and retry_after.isascii() else {}
    err = error_from_response("p", response(status, body, headers))
    assert isinstance(err, E.SDKError) and err.message


@given(st.binary(max_size=200))
def test_decode_json_body_gives_provider_error_or_dict(body: bytes) -> None:
    try:
        value = decode_json_body("p", response(200, body))
    except E.ProviderError as exc:
        assert "JSON" in exc.message
    else:
        assert isinstance(value, dict)


@given(st.text(max_size=200))
def test_decode_json_event_gives_stream_error_or_dict(data: str) -> None:
    try:
        assert isinstance(decode_json_event("p", data), dict)
    except E.StreamError as exc:
        assert "not" in exc.message


@given(st.dictionaries(st.sampled_from([
    "x-ratelimit-remaining-requests", "x-ratelimit-limit-requests", "x-ratelimit-reset-requests",
    "anthropic-ratelimit-requests-reset", "x-ratelimit-remaining-tokens"]),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=20)))
def test_rate_limit_headers_never_raise(headers: dict[str, str]) -> None:
    rate_limit_from_headers(headers, now=0.0)


def test_rate_limit_counts_that_are_not_finite_are_dropped_not_raised() -> None:
    info = rate_limit_from_headers({"x-ratelimit-remaining-requests": "INFINITY",
                                    "x-ratelimit-limit-requests": "nan", "x-ratelimit-remaining-tokens": "12"})
    assert info is not None
    assert (info.requests_remaining, info.requests_limit, info.tokens_remaining) == (None, None, 12)


def test_3_12_rate_limit_headers_openai_and_anthropic() -> None:
    info = rate_limit_from_headers({
        "x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "499",
        "x-ratelimit-limit-tokens": "30000", "x-ratelimit-remaining-tokens": "29000",
        "x-ratelimit-reset-requests": "6m0s",
    }, now=1000.0)
    assert info is not None
    assert (info.requests_limit, info.requests_remaining, info.tokens_limit, info.tokens_remaining) == (
        500, 499, 30000, 29000)
    assert info.reset_at == 1360.0
    anth = rate_limit_from_headers({"anthropic-ratelimit-requests-remaining": "7",
                                    "anthropic-ratelimit-requests-reset": "1970-01-01T00:01:00Z"})
    assert anth is not None and anth.requests_remaining == 7 and anth.reset_at == 60.0
    assert rate_limit_from_headers({"content-type": "application/json"}) is None


def test_transport_errors_map_to_network_timeout_and_stream_errors() -> None:
    req = httpx.Request("POST", "http://x")
    assert isinstance(error_from_transport("p", httpx.ConnectError("refused", request=req)), E.NetworkError)
    timeout = error_from_transport("p", httpx.ReadTimeout("slow", request=req))
    assert isinstance(timeout, E.RequestTimeoutError) and "waiting for data" in timeout.message
    cut = error_from_transport("p", httpx.RemoteProtocolError("peer closed", request=req), streaming=True)
    assert isinstance(cut, E.StreamError) and cut.retryable


def test_a_429_with_retry_after_ms_only_carries_it_in_seconds() -> None:
    err = error_from_response("p", response(429, b'{"error": {"message": "slow down"}}', {"retry-after-ms": "1500"}))
    assert isinstance(err, E.RateLimitError) and err.retry_after == 1.5
