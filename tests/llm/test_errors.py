"""Error taxonomy and classification of unified-llm spec §6.1–6.5."""

from __future__ import annotations

import pytest

from codeloop.llm import errors as E


@pytest.mark.parametrize(
    ("status", "cls", "retryable"),
    [
        (400, E.InvalidRequestError, False),
        (401, E.AuthenticationError, False),
        (403, E.AccessDeniedError, False),
        (404, E.NotFoundError, False),
        (408, E.RequestTimeoutError, False),
        (413, E.ContextLengthError, False),
        (422, E.InvalidRequestError, False),
        (429, E.RateLimitError, True),
        (500, E.ServerError, True),
        (502, E.ServerError, True),
        (503, E.ServerError, True),
        (504, E.ServerError, True),
        (529, E.ServerError, True),
    ],
)
def test_6_4_status_code_mapping(status: int, cls: type[E.SDKError], retryable: bool) -> None:
    err = E.error_from_status_code(status, "boom", provider="openai", raw={"error": {"message": "boom"}})
    assert type(err) is cls
    assert err.retryable is retryable
    assert f"HTTP {status}" in err.message and "boom" in err.message


def test_6_3_unknown_status_defaults_to_retryable() -> None:
    err = E.error_from_status_code(418, "teapot", provider="x")
    assert type(err) is E.ProviderError and err.retryable


def test_6_2_provider_error_fields() -> None:
    err = E.error_from_status_code(
        429, "slow down", provider="anthropic", error_code="rate_limit_error",
        raw={"type": "error"}, retry_after=7.0,
    )
    assert isinstance(err, E.RateLimitError)
    assert (err.provider, err.status_code, err.error_code, err.retry_after, err.raw) == (
        "anthropic", 429, "rate_limit_error", 7.0, {"type": "error"},
    )


@pytest.mark.parametrize(
    ("message", "cls"),
    [
        ("This model's maximum context length is 8192 tokens", E.ContextLengthError),
        ("prompt has too many tokens", E.ContextLengthError),
        ("blocked by the content filter", E.ContentFilterError),
        ("Response blocked for safety reasons", E.ContentFilterError),
        ("You exceeded your current quota", E.QuotaExceededError),
    ],
)
def test_6_5_message_classification_sharpens_400(message: str, cls: type[E.SDKError]) -> None:
    assert type(E.error_from_status_code(400, message, provider="p")) is cls


def test_6_5_message_classification_for_unmapped_status() -> None:
    assert type(E.error_from_status_code(None, "model does not exist", provider="p")) is E.NotFoundError
    assert type(E.error_from_status_code(409, "Unauthorized", provider="p")) is E.AuthenticationError
    assert E.classify_message("all good") is None


def test_6_5_429_insufficient_quota_is_not_retryable() -> None:
    err = E.error_from_status_code(429, "You exceeded your quota", provider="openai", error_code="insufficient_quota")
    assert type(err) is E.QuotaExceededError and not err.retryable


def test_llama_cpp_context_size_errors_are_context_length_and_not_retried() -> None:
    # llama-server answers 500 when generation fills its context, 400 when the prompt does.
    full = E.error_from_status_code(500, "Context size has been exceeded.", provider="openai_compatible")
    assert type(full) is E.ContextLengthError and not full.retryable
    prompt = E.error_from_status_code(400, "the request exceeds the available context size, try increasing it",
                                      provider="openai_compatible", error_code="exceed_context_size_error")
    assert type(prompt) is E.ContextLengthError
    # Other 5xx wording never turns a server error into a client error.
    assert type(E.error_from_status_code(500, "model not found", provider="p")) is E.ServerError


def test_6_5_status_wins_over_message_for_unambiguous_codes() -> None:
    assert type(E.error_from_status_code(401, "model not found", provider="p")) is E.AuthenticationError


@pytest.mark.parametrize(
    ("grpc", "cls"),
    [
        ("NOT_FOUND", E.NotFoundError),
        ("INVALID_ARGUMENT", E.InvalidRequestError),
        ("UNAUTHENTICATED", E.AuthenticationError),
        ("PERMISSION_DENIED", E.AccessDeniedError),
        ("RESOURCE_EXHAUSTED", E.RateLimitError),
        ("UNAVAILABLE", E.ServerError),
        ("DEADLINE_EXCEEDED", E.RequestTimeoutError),
        ("INTERNAL", E.ServerError),
    ],
)
def test_6_4_grpc_status_mapping(grpc: str, cls: type[E.SDKError]) -> None:
    assert type(E.error_from_status_code(None, "x", provider="gemini", grpc_status=grpc)) is cls


def test_6_3_retryable_flags_of_non_provider_errors() -> None:
    assert E.NetworkError("x").retryable and E.StreamError("x").retryable
    for cls in (E.RequestTimeoutError, E.AbortError, E.ConfigurationError, E.InvalidToolCallError,
                E.UnsupportedToolChoiceError, E.NoObjectGeneratedError):
        assert not cls("x").retryable
    assert not E.is_retryable(ValueError("bug"))


def test_6_1_every_error_is_an_sdk_error() -> None:
    for name in ["ProviderError", "AuthenticationError", "AccessDeniedError", "NotFoundError",
                 "InvalidRequestError", "RateLimitError", "ServerError", "ContentFilterError",
                 "ContextLengthError", "QuotaExceededError"]:
        assert issubclass(getattr(E, name), E.ProviderError)
    for name in ["RequestTimeoutError", "AbortError", "NetworkError", "StreamError",
                 "InvalidToolCallError", "UnsupportedToolChoiceError", "NoObjectGeneratedError",
                 "ConfigurationError"]:
        cls = getattr(E, name)
        assert issubclass(cls, E.SDKError) and not issubclass(cls, E.ProviderError)


def test_6_6_retry_after_seconds_and_http_date() -> None:
    assert E.parse_retry_after("2.5") == 2.5
    assert E.parse_retry_after(None) is None
    assert E.parse_retry_after("soon") is None
    assert E.parse_retry_after("-3") == 0.0
    assert E.parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", now=40.0) == 60.0


def test_6_6_retry_after_ms_wins_over_retry_after_when_it_is_a_number() -> None:
    assert E.retry_after_from_headers({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    assert E.retry_after_from_headers({"retry-after-ms": "inf", "retry-after": "3"}) == 3.0
    assert E.retry_after_from_headers({"retry-after-ms": "soon"}) is None
    assert E.retry_after_from_headers({"retry-after-ms": "-5"}) == 0.0
    assert E.retry_after_from_headers({}) is None
