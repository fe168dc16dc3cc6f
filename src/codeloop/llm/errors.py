"""Errors of the LLM layer and their classification (unified-llm spec §6).

The whole tree (§6.1)::

    SDKError                          base: message, cause, retryable
     +-- ProviderError                the provider answered with an error
     |    +-- AuthenticationError     401, "unauthorized"/"invalid key" in the message
     |    +-- AccessDeniedError       403
     |    +-- NotFoundError           404, "not found"/"does not exist"
     |    +-- InvalidRequestError     400, 422
     |    +-- RateLimitError          429 (retryable; honours Retry-After)
     |    +-- ServerError             500-599 (retryable)
     |    +-- ContentFilterError      "content filter"/"safety"
     |    +-- ContextLengthError      413, "context length"/"too many tokens"
     |    +-- QuotaExceededError      billing quota exhausted (e.g. 429 insufficient_quota)
     +-- RequestTimeoutError          408, or a connect/read/total timeout
     +-- AbortError                   cancelled through an abort signal
     +-- NetworkError                 connection refused/reset, DNS (retryable)
     +-- StreamError                  a stream broke or ended early (retryable)
     +-- InvalidToolCallError         tool call arguments are not a JSON object / invalid
     +-- UnsupportedToolChoiceError   the adapter cannot honour a ToolChoice mode
     +-- NoObjectGeneratedError       structured output did not parse or validate
     +-- ConfigurationError           misuse: no provider, missing key, bad argument

Every error carries ``retryable`` (§6.3). Adapters turn an HTTP error into one of these in
one place, :func:`error_from_status_code`, which applies the status table (§6.4) and, for
ambiguous statuses, the message signals (§6.5). Unknown statuses default to retryable.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from typing import Any


class SDKError(Exception):
    """Base of every error this layer raises."""

    retryable: bool = False

    def __init_subclass__(cls, *, retryable: bool | None = None) -> None:
        super().__init_subclass__()
        if retryable is not None:
            cls.retryable = retryable

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.message = message
        """Human-readable description: what happened and, where known, how to fix it."""
        self.cause = cause
        """The lower-level exception, if any."""


class ProviderError(SDKError, retryable=True):
    """The provider returned an error response (§6.2)."""

    def __init__(
        self, message: str, *, provider: str, status_code: int | None = None, error_code: str | None = None,
        retryable: bool | None = None, retry_after: float | None = None, raw: dict[str, Any] | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, cause=cause)
        self.provider = provider
        """Which adapter received the error."""
        self.status_code = status_code
        """HTTP status, if any."""
        self.error_code = error_code
        """The provider's error code or type string."""
        if retryable is not None:
            self.retryable = retryable
        self.retry_after = retry_after
        """Seconds the provider asked us to wait (Retry-After), if any."""
        self.raw = raw
        """The error body as JSON, if it was JSON."""


class AuthenticationError(ProviderError, retryable=False):
    """401: the API key is missing, invalid or expired."""


class AccessDeniedError(ProviderError, retryable=False):
    """403: the key lacks permission for this model or endpoint."""


class NotFoundError(ProviderError, retryable=False):
    """404: unknown model or endpoint (check the model id and base URL)."""


class InvalidRequestError(ProviderError, retryable=False):
    """400/422: the provider rejected the request's shape or parameters."""


class RateLimitError(ProviderError, retryable=True):
    """429: too many requests; retry after ``retry_after`` seconds."""


class ServerError(ProviderError, retryable=True):
    """5xx: the provider failed; usually transient."""


class ContentFilterError(ProviderError, retryable=False):
    """The provider's safety filter blocked the request or response."""


class ContextLengthError(ProviderError, retryable=False):
    """413 or a context-length message: input plus output exceed the model's window."""


class QuotaExceededError(ProviderError, retryable=False):
    """The account's billing or usage quota is exhausted."""


class RequestTimeoutError(SDKError, retryable=False):
    """The request or stream took longer than allowed (408 or a client-side timeout)."""

    def __init__(
        self, message: str, *, provider: str | None = None, status_code: int | None = None,
        raw: dict[str, Any] | None = None, cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, cause=cause)
        self.provider = provider
        """Which adapter timed out, when known."""
        self.status_code = status_code
        """408 when the server said so; None for a client-side timeout."""
        self.raw = raw
        """The error body, when the server sent one."""


class AbortError(SDKError):
    """The caller cancelled the operation through an abort signal."""


class NetworkError(SDKError, retryable=True):
    """The connection failed (refused, reset, DNS); usually transient."""


class StreamError(SDKError, retryable=True):
    """A stream broke, sent malformed data, or ended without its final event."""


class InvalidToolCallError(SDKError):
    """A tool call's arguments are not valid JSON or fail the tool's schema."""


class UnsupportedToolChoiceError(SDKError):
    """The adapter cannot honour the requested ToolChoice mode."""


class NoObjectGeneratedError(SDKError):
    """Structured output could not be parsed or did not match the schema."""

    def __init__(self, message: str, *, text: str = "", cause: BaseException | None = None) -> None:
        super().__init__(message, cause=cause)
        self.text = text
        """The model's raw text, for diagnosis."""


class ConfigurationError(SDKError):
    """The library was misused or misconfigured (missing provider or key, bad argument)."""


def is_retryable(exc: BaseException) -> bool:
    """Whether retrying the call that raised ``exc`` may help (§6.3).

    SDK errors answer for themselves. Anything else is a programming error in our code or
    the caller's, and retrying it would only repeat it.
    """
    return isinstance(exc, SDKError) and exc.retryable


_MESSAGE_SIGNALS: tuple[tuple[tuple[str, ...], type[ProviderError]], ...] = (
    # llama.cpp: "Context size has been exceeded." (HTTP 500), "exceed_context_size_error" (400).
    (("context length", "context_length", "too many tokens", "maximum context", "context size",
      "exceed_context_size"), ContextLengthError),
    (("content filter", "content_filter", "safety"), ContentFilterError),
    (("insufficient_quota", "quota"), QuotaExceededError),
    (("not found", "does not exist"), NotFoundError),
    (("unauthorized", "invalid key", "invalid api key", "invalid_api_key"), AuthenticationError),
)


def classify_message(message: str) -> type[ProviderError] | None:
    """The error class a message's wording points to (§6.5), or None without a signal."""
    lowered = message.lower()
    for needles, cls in _MESSAGE_SIGNALS:
        if any(n in lowered for n in needles):
            return cls
    return None


_STATUS_CLASSES: dict[int, type[SDKError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: AccessDeniedError,
    404: NotFoundError,
    408: RequestTimeoutError,
    413: ContextLengthError,
    422: InvalidRequestError,
    429: RateLimitError,
}

# Statuses whose meaning the body may sharpen (§6.5): a 400 that says "context length" is
# a ContextLengthError, a 429 that says "insufficient_quota" will not clear by waiting.
_AMBIGUOUS = frozenset({400, 422, 429})

_GRPC_CLASSES: dict[str, type[SDKError]] = {
    "NOT_FOUND": NotFoundError,
    "INVALID_ARGUMENT": InvalidRequestError,
    "FAILED_PRECONDITION": InvalidRequestError,
    "UNAUTHENTICATED": AuthenticationError,
    "PERMISSION_DENIED": AccessDeniedError,
    "RESOURCE_EXHAUSTED": RateLimitError,
    "UNAVAILABLE": ServerError,
    "INTERNAL": ServerError,
    "DEADLINE_EXCEEDED": RequestTimeoutError,
}


def error_from_status_code(
    status_code: int | None,
    message: str,
    *,
    provider: str,
    error_code: str | None = None,
    raw: dict[str, Any] | None = None,
    retry_after: float | None = None,
    grpc_status: str | None = None,
) -> SDKError:
    """The SDK error for an HTTP error response (§6.4, §6.5, §7.6).

    ``grpc_status`` (Gemini's ``error.status``) is used when the HTTP status is not in the
    table. The message keeps the status so a user can tell what the server said.
    """
    text = f"{provider} returned HTTP {status_code}: {message}" if status_code else f"{provider}: {message}"
    cls: type[SDKError] | None = _STATUS_CLASSES.get(status_code or 0)
    if cls is None and status_code is not None and 500 <= status_code <= 599:
        cls = ServerError
    if cls is None and grpc_status:
        cls = _GRPC_CLASSES.get(grpc_status.upper())
    if cls is None or cls is ServerError or (status_code in _AMBIGUOUS):
        hinted = classify_message(f"{message} {error_code or ''}")
        if hinted is not None and (cls is None or _sharpens(cls, hinted)):
            cls = hinted
    if cls is RequestTimeoutError:
        return RequestTimeoutError(text, provider=provider, status_code=status_code, raw=raw)
    # Unknown errors are a plain ProviderError, retryable by default (§6.3): a false retry
    # costs less than a false abort.
    cls = cls or ProviderError
    assert issubclass(cls, ProviderError)
    return cls(
        text, provider=provider, status_code=status_code, error_code=error_code,
        retry_after=retry_after, raw=raw,
    )


def error_in_answer(
    provider: str, raw: dict[str, Any], error: Any, *, missing: str, code_keys: tuple[str, ...] = ("type",),
    statuses: Mapping[str, int] | None = None, default_code: str | None = None, grpc: bool = False,
) -> SDKError:
    """The error an answer carries inside a 200 body or stream (it has no HTTP status).

    ``error_code`` is the first of ``code_keys`` set in ``error`` (else ``default_code``);
    the status is ``statuses[error_code]`` (500 when absent) when a table is given, else
    ``error["code"]`` when that is a number. ``missing`` stands in for an absent message;
    ``grpc`` also reads the code as a gRPC status (Gemini).
    """
    fields: dict[str, Any] = error if isinstance(error, dict) else {}
    code = next((str(fields[k]) for k in code_keys if fields.get(k)), default_code)
    number = fields.get("code")
    status = number if isinstance(number, int) else None
    if statuses is not None:
        status = statuses.get(code or "", 500)
    return error_from_status_code(
        status, str(fields.get("message") or missing), provider=provider, error_code=code, raw=raw,
        grpc_status=code if grpc else None,
    )


def _sharpens(status_cls: type[SDKError], hinted: type[ProviderError]) -> bool:
    """Whether a message signal may override the status class."""
    if status_cls is RateLimitError:
        return hinted is QuotaExceededError
    if status_cls is ServerError:
        # A server failing because the input is too long will fail again on retry.
        return hinted is ContextLengthError
    return status_cls is InvalidRequestError and hinted in (
        ContextLengthError, ContentFilterError, QuotaExceededError
    )


def retry_after_from_headers(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait before a retry: ``retry-after-ms`` (milliseconds, sent by OpenAI and
    Anthropic, more precise) when it is a usable number, else ``retry-after``."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms.strip())
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value / 1000)
    return parse_retry_after(headers.get("retry-after"))


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date), or None.

    Garbage yields None (the header is advisory); negative values clamp to 0.
    """
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
