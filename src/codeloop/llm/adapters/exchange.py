"""One HTTP exchange of a native adapter: a JSON POST, or a POST answered by an SSE stream.

Shared by the OpenAI Responses, Anthropic and Gemini adapters (unified-llm spec §7.5–§7.7).
Whatever goes wrong becomes an SDK error here, through :mod:`codeloop.llm.wire`:

- a transport failure before the answer → NetworkError / RequestTimeoutError;
- an HTTP error status → the adapter's ``map_error`` (status + body → §6 class);
- a 2xx body that is not a JSON object → ProviderError (retryable) quoting the body;
- a stream cut mid-way → StreamError; silence longer than the stream read timeout →
  RequestTimeoutError.

Each adapter passes its own ``map_error`` so provider quirks (Gemini's ``RetryInfo``,
Anthropic's 529) stay in the adapter file.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from codeloop.llm.adapters.base import AdapterTimeout
from codeloop.llm.errors import RequestTimeoutError, SDKError
from codeloop.llm.sse import SSEEvent, aiter_sse
from codeloop.llm.wire import decode_json_body, error_from_transport

ErrorMapper = Callable[[httpx.Response, bytes], SDKError]

MALFORMED = (TypeError, ValueError, AttributeError, LookupError)
"""What parsing a provider JSON of the wrong shape can raise; adapters turn these into
ProviderError (a body) or StreamError (a stream event), never let them escape."""
"""Turns an HTTP error response (status, headers) and its body into the SDK error to raise."""

_MAX_ERROR_BODY = 64 * 1024


def timeout_of(timeout: float | AdapterTimeout | None) -> AdapterTimeout:
    """An :class:`AdapterTimeout` from the constructor's ``timeout`` argument.

    A number sets the whole-request limit and the longest silence inside a stream.
    """
    if timeout is None:
        return AdapterTimeout()
    if isinstance(timeout, AdapterTimeout):
        return timeout
    return AdapterTimeout(connect=min(10.0, float(timeout)), request=float(timeout), stream_read=float(timeout))


@dataclass(frozen=True, slots=True)
class JsonAnswer:
    """A successful JSON response."""

    body: dict[str, Any]
    """The decoded JSON object."""
    headers: httpx.Headers
    """Response headers (rate limits)."""


async def _read_error(provider: str, response: httpx.Response) -> bytes:
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


async def post_json(
    client: httpx.AsyncClient,
    provider: str,
    url: str,
    body: Mapping[str, Any],
    *,
    limits: AdapterTimeout,
    map_error: ErrorMapper,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
) -> JsonAnswer:
    """POST ``body`` as JSON and return the JSON answer, or raise the SDK error."""
    try:
        async with asyncio.timeout(limits.request):
            response = await client.post(url, json=dict(body), headers=dict(headers or {}), params=params)
    except TimeoutError as exc:
        raise RequestTimeoutError(
            f"{provider}: no complete answer within {limits.request:g} s", provider=provider, cause=exc
        ) from exc
    except httpx.HTTPError as exc:
        raise error_from_transport(provider, exc) from exc
    if response.status_code >= 400:
        raise map_error(response, response.content[:_MAX_ERROR_BODY])
    return JsonAnswer(decode_json_body(provider, response), response.headers)


@dataclass(slots=True)
class EventStream:
    """An open SSE answer: its headers, and its events as they arrive."""

    headers: httpx.Headers
    """Response headers (rate limits)."""
    events: AsyncIterator[SSEEvent]
    """Parsed events; transport failures surface as SDK errors while iterating."""


async def _guarded_events(
    provider: str, response: httpx.Response, read_timeout: float
) -> AsyncIterator[SSEEvent]:
    chunks = response.aiter_bytes()
    parsed = aiter_sse(_with_silence_limit(provider, chunks, read_timeout))
    try:
        async for event in parsed:
            yield event
    except httpx.HTTPError as exc:
        raise error_from_transport(provider, exc, streaming=True) from exc


async def _with_silence_limit(
    provider: str, chunks: AsyncIterator[bytes], read_timeout: float
) -> AsyncIterator[bytes]:
    while True:
        try:
            async with asyncio.timeout(read_timeout):
                chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        except TimeoutError as exc:
            raise RequestTimeoutError(
                f"{provider}: the stream sent nothing for {read_timeout:g} s", provider=provider, cause=exc
            ) from exc
        yield chunk


@asynccontextmanager
async def open_event_stream(
    client: httpx.AsyncClient,
    provider: str,
    url: str,
    body: Mapping[str, Any],
    *,
    limits: AdapterTimeout,
    map_error: ErrorMapper,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
) -> AsyncIterator[EventStream]:
    """POST ``body`` and yield the SSE stream; the connection closes when the block exits.

    An HTTP error status raises before the block is entered (nothing was streamed yet).
    """
    request = client.build_request(
        "POST",
        url,
        json=dict(body),
        headers={"accept": "text/event-stream", **dict(headers or {})},
        params=params,
        timeout=httpx.Timeout(limits.stream_read, connect=limits.connect),
    )
    try:
        async with asyncio.timeout(limits.request):
            response = await client.send(request, stream=True)
    except TimeoutError as exc:
        raise RequestTimeoutError(
            f"{provider}: the stream did not start within {limits.request:g} s", provider=provider, cause=exc
        ) from exc
    except httpx.HTTPError as exc:
        raise error_from_transport(provider, exc) from exc
    try:
        if response.status_code >= 400:
            raise map_error(response, await _read_error(provider, response))
        if response.headers.get("content-type", "").startswith("application/json"):
            # A gateway that ignores ``stream: true`` answers with one JSON body.
            snippet = (await _read_error(provider, response))[:300].decode("utf-8", "replace")
            from codeloop.llm.errors import ProviderError

            raise ProviderError(
                f"{provider} answered a streaming request with JSON instead of an event stream "
                f"(does the server or gateway support streaming?): {snippet!r}",
                provider=provider, status_code=response.status_code, retryable=False,
            )
        yield EventStream(response.headers, _guarded_events(provider, response, limits.stream_read))
    finally:
        await response.aclose()


def unexpected_shape(provider: str, what: str, exc: Exception, raw: Any) -> SDKError:
    """The error for a 2xx answer whose JSON lacks what the wire format promises.

    Adapters parse with ``.get`` and type checks; this is the net under them, so a shape
    change at the provider reads as a clear ProviderError rather than a KeyError.
    """
    from codeloop.llm.errors import ProviderError

    snippet = repr(raw)[:300]
    return ProviderError(
        f"{provider} returned {what} in an unexpected shape ({type(exc).__name__}: {exc}): {snippet}",
        provider=provider, retryable=True, raw=raw if isinstance(raw, dict) else None, cause=exc,
    )


def require_api_key(provider: str, explicit: str | None, *env_names: str) -> str:
    """``explicit``, else the first non-empty variable of ``env_names``; ConfigurationError if none.

    Raised at construction, so a missing key is reported before any request is built.
    """
    import os

    from codeloop.llm.errors import ConfigurationError

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
        import weakref

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
