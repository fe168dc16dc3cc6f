"""The one request flow of every HTTP adapter (unified-llm spec §2.4, §4.7, §7.5–§7.7).

:class:`HTTPAdapter` writes ``complete`` and ``stream`` once: the JSON POST, the SSE stream,
timeouts, rate-limit headers and error mapping. A wire API (one file each: OpenAI
Responses, Anthropic Messages, Gemini, Chat Completions) subclasses it and only translates
(``build_call``; ``parser`` and ``state_type``, or ``parse_response`` and ``new_stream_state``
when it needs the request; optionally ``map_error``).

Whatever goes wrong becomes an SDK error here, so that no adapter lets an ``httpx``
exception, a ``KeyError`` or a ``JSONDecodeError`` escape: a transport failure →
NetworkError / RequestTimeoutError / StreamError (:func:`error_from_transport`); an HTTP
error status → ``map_error`` (by default :func:`error_from_response`: body message, code,
``Retry-After``, raw body kept); a 2xx body or stream event that is not a JSON object →
ProviderError / StreamError quoting it (:func:`decode_json_body`, :func:`decode_json_event`);
silence longer than the stream read timeout → RequestTimeoutError; a stream event of the
wrong shape (a :data:`MALFORMED` error in the state) → StreamError; an answer larger than
:data:`MAX_ANSWER_BYTES`, or a stream line longer than :data:`MAX_LINE_BYTES`, → a
non-retryable ProviderError, read no further (memory stays bounded). Rate limits come from
``x-ratelimit-*`` / ``anthropic-ratelimit-*`` headers (:func:`rate_limit_from_headers`).

Over 500 lines on purpose: it is everything the four wire adapters share (answer decoding,
error, rate-limit and usage readers, the flow itself), gathered so each adapter file only translates.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import httpx

from codeloop.llm.adapters.base import AdapterTimeout
from codeloop.llm.errors import (
    ConfigurationError,
    NetworkError,
    ProviderError,
    RequestTimeoutError,
    SDKError,
    StreamError,
    error_from_status_code,
    retry_after_from_headers,
)
from codeloop.llm.sse import SSEEvent, aiter_sse
from codeloop.llm.types import RateLimitInfo, Request, Response, StreamEvent, StreamEventType, Usage, Warning

MALFORMED = (TypeError, ValueError, AttributeError, LookupError)
"""What parsing a provider JSON of the wrong shape can raise; parsers turn these into
ProviderError (a body, :func:`unexpected_shape`) and the flow into StreamError (a stream
event), so they never escape."""

_MAX_ERROR_BODY = 64 * 1024
MAX_ANSWER_BYTES = 32 << 20
"""The most of one answer (a JSON body, or a whole stream) read before giving up: far above
what a model replies (a 128k-token stream is ~20 MiB), far below what would hurt."""
MAX_LINE_BYTES = 8 << 20
"""The longest stream line held while waiting for its end (no provider event is near it)."""


def too_large(provider: str, what: str, limit: int) -> ProviderError:
    return ProviderError(
        f"{provider} sent {what} larger than {limit >> 20} MiB; codeloop stopped reading it "
        "(is the base URL a model API, or a proxy answering something else?)",
        provider=provider, status_code=200, retryable=False,
    )


# ------------------------------------------------------------ HTTP answers → SDK values


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
        response.status_code, message, provider=provider, error_code=code, raw=raw,
        retry_after=retry_after_from_headers(response.headers), grpc_status=grpc,
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
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def rate_limit_from_headers(headers: Mapping[str, str], *, now: float | None = None) -> RateLimitInfo | None:
    """RateLimitInfo from ``x-ratelimit-*`` (OpenAI) or ``anthropic-ratelimit-*`` headers (§3.12)."""
    info = RateLimitInfo(
        _int_header(headers, "x-ratelimit-remaining-requests", "anthropic-ratelimit-requests-remaining"),
        _int_header(headers, "x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit"),
        _int_header(headers, "x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining"),
        _int_header(headers, "x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit"),
        _reset_header(headers, time.time() if now is None else now),
    )
    return None if info == RateLimitInfo() else info


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_from(raw: Any, input_key: str, output_key: str) -> Usage:
    """Usage from an OpenAI-style ``usage`` object (absent → zeros): the two counts, ``total_tokens``,
    and ``cached_tokens`` / ``reasoning_tokens`` in ``{input_key}_details`` / ``{output_key}_details``."""
    usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
    inp, out = _count(usage.get(input_key)) or 0, _count(usage.get(output_key)) or 0
    cached, reasoning = usage.get(f"{input_key}_details"), usage.get(f"{output_key}_details")
    return Usage(
        inp, out, _count(usage.get("total_tokens")) or inp + out,
        reasoning_tokens=_count(reasoning.get("reasoning_tokens")) if isinstance(reasoning, dict) else None,
        cache_read_tokens=_count(cached.get("cached_tokens")) if isinstance(cached, dict) else None,
        raw=usage or None,
    )


# ------------------------------------------------------------ adapter plumbing


def timeout_of(timeout: float | AdapterTimeout | None) -> AdapterTimeout:
    """An :class:`AdapterTimeout` from the constructor's ``timeout`` argument.

    A number sets the whole-request limit and the longest silence inside a stream.
    """
    if timeout is None:
        return AdapterTimeout()
    if isinstance(timeout, AdapterTimeout):
        return timeout
    return AdapterTimeout(connect=min(10.0, float(timeout)), request=float(timeout), stream_read=float(timeout))


def unexpected_shape(provider: str, what: str, exc: Exception, raw: Any) -> SDKError:
    """The error for a 2xx answer whose JSON lacks what the wire format promises.

    Adapters parse with ``.get`` and type checks; this is the net under them, so a shape
    change at the provider reads as a clear ProviderError rather than a KeyError.
    """
    snippet = repr(raw)[:300]
    return ProviderError(
        f"{provider} returned {what} in an unexpected shape ({type(exc).__name__}: {exc}): {snippet}",
        provider=provider, retryable=True, raw=raw if isinstance(raw, dict) else None, cause=exc,
    )


def require_api_key(provider: str, explicit: str | None, *env_names: str) -> str:
    """``explicit``, else the first non-empty variable of ``env_names``; ConfigurationError if none.

    Raised at construction, so a missing key is reported before any request is built.
    """
    key = explicit if explicit is not None else next((os.environ[n] for n in env_names if os.environ.get(n)), None)
    if not key:
        names = " or ".join(env_names)
        raise ConfigurationError(
            f"{provider}: no API key; pass api_key=... or set {names} "
            "(any non-empty value works for a local server that ignores it)"
        )
    return key


class PerLoopClient:
    """One ``httpx.AsyncClient`` per event loop, made on first use in that loop.

    A pooled connection belongs to the loop that opened it: an adapter used from several
    ``asyncio.run()`` calls (the synchronous wrappers do that) would otherwise reuse a dead
    connection and fail with "Event loop is closed". Clients of loops that have ended are
    dropped with their loop; ``aclose()`` closes the current loop's client.
    """

    def __init__(self, factory: Callable[[], httpx.AsyncClient]) -> None:
        self._factory = factory
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> httpx.AsyncClient:
        """The client of the running loop."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = self._factory()
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close the running loop's client. Idempotent."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()


@dataclass(slots=True)
class WireCall:
    """One HTTP call of a wire API, as built from a :class:`Request`."""

    url: str
    """Absolute, or relative to the adapter's ``base_url``."""
    body: dict[str, Any]
    """The JSON body."""
    warnings: list[Warning] = field(default_factory=list)
    """What the request asked for that this wire cannot carry; they land on the response."""
    headers: Mapping[str, str] | None = None
    """Headers of this call only (the adapter's own are always sent)."""
    params: Mapping[str, str] | None = None
    """Query parameters."""


class StreamState(Protocol):
    """Turns one wire API's SSE events into unified events (one per stream)."""

    @property
    def finished(self) -> bool:
        """The final event arrived: the flow reads no further."""
        ...

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        """The events ``sse`` produces; raises an SDKError, or a MALFORMED error for a bad shape."""
        ...

    def end(self) -> list[StreamEvent]:
        """The stream is over: the closing events, or StreamError when it ended too early."""
        ...


class HTTPAdapter(ABC):
    """``complete`` and ``stream`` over httpx, for a subclass that translates one wire API.

    Safe for concurrent use (no per-request state on the adapter); ``close()`` when done.
    """

    announces_start = False
    """Whether the flow yields STREAM_START when the answer's headers arrive (for wires
    that have no start event of their own)."""
    parser: Callable[..., Response]
    """``parser(body, rate_limit=..., warnings=...)``, called by the default ``parse_response``."""
    state_type: Callable[[RateLimitInfo | None, list[Warning]], StreamState]
    """``state_type(rate_limit, warnings)``, called by the default ``new_stream_state``."""

    def __init__(
        self, name: str, *, headers: Mapping[str, str], timeout: float | AdapterTimeout | None,
        transport: httpx.AsyncBaseTransport | None, base_url: str = "",
    ) -> None:
        self._name = name
        self.timeout = timeout_of(timeout)
        # ``timeout.request`` bounds reads of whole answers; streams re-apply ``stream_read``.
        client_timeout = httpx.Timeout(self.timeout.request, connect=self.timeout.connect)
        self._http = PerLoopClient(
            lambda: httpx.AsyncClient(
                base_url=base_url, headers=dict(headers), timeout=client_timeout, transport=transport
            )
        )

    @property
    def name(self) -> str:
        """Provider id used for routing and in error messages."""
        return self._name

    def supports_tool_choice(self, mode: str) -> bool:
        """All four modes (§5.3); a wire without ``none`` omits the tools instead."""
        return mode in ("auto", "none", "required", "named")

    async def close(self) -> None:
        """Release the connections of the running loop. Idempotent."""
        await self._http.aclose()

    # ------------------------------------------------------------ translation

    @abstractmethod
    def build_call(self, request: Request, *, stream: bool) -> WireCall:
        """The HTTP call for ``request``; ``stream`` asks for an SSE answer."""

    def parse_response(
        self, body: dict[str, Any], request: Request, rate_limit: RateLimitInfo | None, warnings: list[Warning]
    ) -> Response:
        """The :class:`Response` for a 2xx JSON ``body``; a MALFORMED shape is a ProviderError."""
        return self.parser(body, rate_limit=rate_limit, warnings=warnings)

    def new_stream_state(
        self, request: Request, rate_limit: RateLimitInfo | None, warnings: list[Warning]
    ) -> StreamState:
        """A fresh state for one stream of ``request``."""
        return self.state_type(rate_limit, warnings)

    def map_error(self, response: httpx.Response, body: bytes) -> SDKError:
        """HTTP error → §6 error: the status table, then body message/code signals (§6.4, §7.6)."""
        return error_from_response(self._name, response, body)

    # ------------------------------------------------------------ the flow

    async def complete(self, request: Request) -> Response:
        """Send ``request`` and return the whole response. Never retries."""
        call = self.build_call(request, stream=False)
        answer = await self._send(call, stream=False)
        if answer.status_code >= 400:
            raise self.map_error(answer, answer.content[:_MAX_ERROR_BODY])
        body = decode_json_body(self._name, answer)
        return self.parse_response(body, request, rate_limit_from_headers(answer.headers), call.warnings)

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield normalized events, FINISH last. Never retries."""
        call = self.build_call(request, stream=True)
        async with self._event_stream(call) as (headers, events):
            state = self.new_stream_state(request, rate_limit_from_headers(headers), call.warnings)
            if self.announces_start:
                yield StreamEvent(StreamEventType.STREAM_START)
            async for sse in events:
                try:
                    produced = state.feed(sse)
                except MALFORMED as exc:
                    raise StreamError(
                        f"{self._name} sent a malformed {sse.event!r} event: {sse.data[:200]!r}", cause=exc
                    ) from exc
                for event in produced:
                    yield event
                if state.finished:
                    break
            for event in state.end():
                yield event

    @asynccontextmanager
    async def _event_stream(self, call: WireCall) -> AsyncIterator[tuple[httpx.Headers, AsyncIterator[SSEEvent]]]:
        """POST ``call`` and yield (headers, SSE events); the connection closes when the block exits.

        An HTTP error status raises before the block is entered (nothing was streamed yet).
        """
        response = await self._send(call, stream=True)
        try:
            if response.status_code >= 400:
                raise self.map_error(response, await _read_error(response))
            if response.headers.get("content-type", "").startswith("application/json"):
                # A gateway that ignores ``stream: true`` answers with one JSON body.
                snippet = (await _read_error(response))[:300].decode("utf-8", "replace")
                raise ProviderError(
                    f"{self._name} answered a streaming request with JSON instead of an event stream "
                    f"(does the server or gateway support streaming?): {snippet!r}",
                    provider=self._name, status_code=response.status_code, retryable=False,
                )
            yield response.headers, self._guarded_events(response)
        finally:
            await response.aclose()

    async def _send(self, call: WireCall, *, stream: bool) -> httpx.Response:
        """POST ``call``: the whole answer, or a stream's headers, within ``timeout.request``."""
        limits = self.timeout
        client = self._http.get()
        headers = {"accept": "text/event-stream", **dict(call.headers or {})} if stream else call.headers
        http_request = client.build_request(
            "POST", call.url, json=call.body, headers=headers, params=call.params,
            timeout=httpx.Timeout(limits.stream_read, connect=limits.connect) if stream else httpx.USE_CLIENT_DEFAULT,
        )
        try:
            async with asyncio.timeout(limits.request):
                response = await client.send(http_request, stream=True)
                if stream:
                    return response
                try:
                    body = await self._read_bounded(response)
                finally:
                    await response.aclose()
        except TimeoutError as exc:
            what = "the stream did not start" if stream else "no complete answer"
            raise RequestTimeoutError(
                f"{self._name}: {what} within {limits.request:g} s", provider=self._name, cause=exc
            ) from exc
        except httpx.HTTPError as exc:
            raise error_from_transport(self._name, exc) from exc
        # aiter_bytes already decoded any content-encoding: the copy must not decode again.
        kept = [(k, v) for k, v in response.headers.multi_items() if k not in ("content-encoding", "content-length")]
        return httpx.Response(response.status_code, headers=kept, content=body, request=http_request)

    async def _read_bounded(self, response: httpx.Response) -> bytes:
        """The whole body, or ``too_large`` once it passes MAX_ANSWER_BYTES (or says it will)."""
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_ANSWER_BYTES:
            raise too_large(self._name, f"an answer of {int(declared)} bytes", MAX_ANSWER_BYTES)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise too_large(self._name, "an answer", MAX_ANSWER_BYTES)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _guarded_events(self, response: httpx.Response) -> AsyncIterator[SSEEvent]:
        parsed = aiter_sse(self._with_silence_limit(response.aiter_bytes()))
        try:
            async for event in parsed:
                yield event
        except httpx.HTTPError as exc:
            raise error_from_transport(self._name, exc, streaming=True) from exc

    async def _with_silence_limit(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        read_timeout = self.timeout.stream_read
        total = line = 0
        while True:
            try:
                async with asyncio.timeout(read_timeout):
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                return
            except TimeoutError as exc:
                raise RequestTimeoutError(
                    f"{self._name}: the stream sent nothing for {read_timeout:g} s", provider=self._name, cause=exc
                ) from exc
            total += len(chunk)
            end = chunk.rfind(b"\n")
            line = line + len(chunk) if end < 0 else len(chunk) - end - 1
            if total > MAX_ANSWER_BYTES:
                raise too_large(self._name, "a stream", MAX_ANSWER_BYTES)
            if line > MAX_LINE_BYTES:
                raise too_large(self._name, "a stream line", MAX_LINE_BYTES)
            yield chunk


async def _read_error(response: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= _MAX_ERROR_BODY:
                break
    except httpx.HTTPError:
        pass  # the status already says what failed; a cut error body only loses detail
    return b"".join(chunks)
