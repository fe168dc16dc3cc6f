"""HTTP answers → SDK values, for the adapter flow (Layer 2 of unified-llm spec §2.1, §7.5, §7.6).

The one place where ``httpx`` failures, error responses, JSON bodies and rate-limit
headers become SDK values, so that no adapter lets an ``httpx`` exception, a
``KeyError`` or a ``JSONDecodeError`` escape:

- :func:`error_from_response`: an HTTP error response → the §6.4 error (body message,
  code, ``Retry-After``, raw body kept).
- :func:`error_from_transport`: an ``httpx`` transport failure → NetworkError,
  RequestTimeoutError or StreamError.
- :func:`decode_json_body`: a 2xx body that is not a JSON object → a ProviderError saying so;
  :func:`decode_json_event`: the same for one stream event → a StreamError.
- :func:`rate_limit_from_headers`: ``x-ratelimit-*`` / ``anthropic-ratelimit-*`` → RateLimitInfo.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any

import httpx

from codeloop.llm.errors import (
    NetworkError,
    ProviderError,
    RequestTimeoutError,
    SDKError,
    StreamError,
    error_from_status_code,
    parse_retry_after,
)
from codeloop.llm.types import RateLimitInfo


def _error_fields(body: Any, text: str) -> tuple[str, str | None, str | None]:
    """(message, error_code, grpc_status) from the usual error body shapes.

    OpenAI/llama.cpp: ``{"error": {"message", "type", "code"}}``; Anthropic:
    ``{"type": "error", "error": {"type", "message"}}``; Gemini: ``{"error": {"code",
    "message", "status"}}``; some servers: ``{"detail": ...}`` or ``{"message": ...}``.
    """
    if isinstance(body, list) and body and isinstance(body[0], dict):
        body = body[0]  # Gemini sometimes wraps the error object in a list
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            message = err.get("message")
            code = err.get("code") if isinstance(err.get("code"), str) else err.get("type")
            status = err.get("status")
            return (
                str(message) if message is not None else text,
                str(code) if code is not None else None,
                str(status) if isinstance(status, str) else None,
            )
        if isinstance(err, str):
            return err, None, None
        for key in ("message", "detail"):
            if key in body:
                return str(body[key]), None, None
    return text, None, None


def error_from_response(provider: str, response: httpx.Response, body_bytes: bytes | None = None) -> SDKError:
    """The SDK error for an HTTP error response whose body has been read (§7.6)."""
    raw_bytes = response.content if body_bytes is None else body_bytes
    text = raw_bytes.decode("utf-8", "replace").strip()
    try:
        body: Any = json.loads(text) if text else None
    except json.JSONDecodeError:
        body = None
    message, code, grpc = _error_fields(body, text[:500] or response.reason_phrase)
    raw = body if isinstance(body, dict) else ({"body": text[:2000]} if text else None)
    return error_from_status_code(
        response.status_code,
        message,
        provider=provider,
        error_code=code,
        raw=raw,
        retry_after=parse_retry_after(response.headers.get("retry-after")),
        grpc_status=grpc,
    )


def error_from_transport(provider: str, exc: httpx.HTTPError, *, streaming: bool = False) -> SDKError:
    """The SDK error for an ``httpx`` failure that is not an HTTP status (§6.1)."""
    if isinstance(exc, httpx.TimeoutException):
        kind = {
            httpx.ConnectTimeout: "connecting",
            httpx.ReadTimeout: "waiting for data",
            httpx.WriteTimeout: "sending the request",
            httpx.PoolTimeout: "waiting for a free connection",
        }.get(type(exc), "waiting")
        return RequestTimeoutError(f"{provider}: timed out {kind} ({exc})", provider=provider, cause=exc)
    if streaming and isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return StreamError(f"{provider}: stream broke: {exc}", cause=exc)
    return NetworkError(f"{provider}: network error: {exc or type(exc).__name__}", cause=exc)


def decode_json_body(provider: str, response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a successful response, or a ProviderError naming the problem."""
    try:
        body = json.loads(response.content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        snippet = response.content[:200].decode("utf-8", "replace")
        raise ProviderError(
            f"{provider} returned HTTP {response.status_code} with a body that is not JSON: {snippet!r}",
            provider=provider, status_code=response.status_code, retryable=True, cause=exc,
        ) from exc
    if not isinstance(body, dict):
        raise ProviderError(
            f"{provider} returned a JSON {type(body).__name__} where an object was expected",
            provider=provider, status_code=response.status_code, retryable=True,
        )
    return body


def decode_json_event(provider: str, data: str) -> dict[str, Any]:
    """The JSON object carried by one stream event, or a StreamError quoting it."""
    try:
        value = json.loads(data)
    except json.JSONDecodeError as exc:
        raise StreamError(f"{provider} sent a stream event that is not JSON: {data[:200]!r}", cause=exc) from exc
    if not isinstance(value, dict):
        raise StreamError(f"{provider} sent a stream event that is not a JSON object: {data[:200]!r}")
    return value


def _int_header(headers: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        value = headers.get(name)
        if value is not None:
            try:
                return int(float(value))
            # "inf"/"nan" parse as floats but are no count; a malformed header must never break a call
            except (ValueError, OverflowError):
                return None
    return None


_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?$")


def _reset_header(headers: Mapping[str, str], now: float) -> float | None:
    """OpenAI sends ``x-ratelimit-reset-requests: 6m0s`` (a duration); Anthropic an RFC 3339 time."""
    value = headers.get("x-ratelimit-reset-requests") or headers.get("anthropic-ratelimit-requests-reset")
    if not value:
        return None
    match = _DURATION.match(value.strip())
    if match and any(match.groups()):
        h, m, s, ms = (float(g) if g else 0.0 for g in match.groups())
        return now + h * 3600 + m * 60 + s + ms / 1000
    try:
        from datetime import datetime

        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def rate_limit_from_headers(headers: Mapping[str, str], *, now: float | None = None) -> RateLimitInfo | None:
    """RateLimitInfo from ``x-ratelimit-*`` (OpenAI) or ``anthropic-ratelimit-*`` headers (§3.12)."""
    info = RateLimitInfo(
        requests_remaining=_int_header(
            headers, "x-ratelimit-remaining-requests", "anthropic-ratelimit-requests-remaining"
        ),
        requests_limit=_int_header(headers, "x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit"),
        tokens_remaining=_int_header(
            headers, "x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining"
        ),
        tokens_limit=_int_header(headers, "x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit"),
        reset_at=_reset_header(headers, time.time() if now is None else now),
    )
    return None if info == RateLimitInfo() else info
