"""A real HTTP server on 127.0.0.1 that replays scripted provider answers and records requests.

The provider modules (``wire_openai_responses``, ``wire_anthropic``, ``wire_gemini``) build
bodies and SSE streams in each provider's documented shape; this module only serves them.
It is a real uvicorn server in a thread, so the adapters go through httpx, sockets, chunked
transfer encoding and connection drops exactly as they would against the provider.

A test pushes one ``Reply`` per expected request; the server answers requests in order and
records each one (method, path, query, headers, body) for field-by-field assertions.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request as StarletteRequest
from starlette.responses import Response as StarletteResponse
from starlette.responses import StreamingResponse
from starlette.routing import Route


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    """HTTP method, e.g. ``POST``."""
    path: str
    """URL path without the query string."""
    query: dict[str, str]
    """Query parameters (last value wins)."""
    headers: dict[str, str]
    """Request headers with lower-cased names."""
    body: bytes
    """The raw request body."""

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    status: int = 200
    """HTTP status code."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers."""
    body: bytes = b""
    """The whole body, used when ``chunks`` is None."""
    content_type: str = "application/json"
    """Content-Type of the answer."""
    chunks: tuple[bytes, ...] | None = None
    """When set, the body is streamed in these pieces (chunked transfer encoding)."""
    cut_after: int | None = None
    """With ``chunks``: drop the connection after sending this many pieces."""
    pause: tuple[int, float] | None = None
    """``(n, seconds)``: wait that long before piece ``n`` (or before the whole body)."""


def json_reply(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """A JSON answer."""
    return Reply(status=status, headers=headers or {}, body=json.dumps(obj).encode())


def raw_reply(
    body: bytes, status: int = 200, content_type: str = "application/json", headers: dict[str, str] | None = None
) -> Reply:
    """An answer with exactly these bytes (used for malformed bodies)."""
    return Reply(status=status, headers=headers or {}, body=body, content_type=content_type)


def sse_frame(data: Any, event: str | None = None, newline: str = "\n") -> bytes:
    """One SSE event: optional ``event:`` line, one ``data:`` line, blank line."""
    payload = data if isinstance(data, str) else json.dumps(data)
    lines = ([f"event: {event}"] if event else []) + [f"data: {payload}"]
    return (newline.join(lines) + newline + newline).encode()


def sse_reply(
    frames: Iterable[bytes], cut_after: int | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """A ``text/event-stream`` answer sent frame by frame; ``cut_after`` drops the connection."""
    return Reply(
        status=200,
        headers=headers or {},
        content_type="text/event-stream",
        chunks=tuple(frames),
        cut_after=cut_after,
    )


class _ConnectionDropped(Exception):
    """Raised inside the body generator so uvicorn aborts the connection mid-body."""


class LoopbackServer:
    """A scripted HTTP server on 127.0.0.1 with a random free port.

    Usage: ``server.push(reply...)``, point an adapter at ``server.base_url``, then read
    ``server.requests``. ``reset()`` clears both between tests.
    """

    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST", "DELETE"])])
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="critical", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash, no path)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LoopbackServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("loopback server did not start within 10 s")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def push(self, *replies: Reply) -> None:
        """Queue answers for the next requests, in order."""
        with self._lock:
            self._replies.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self.requests.clear()

    @property
    def last(self) -> RecordedRequest:
        """The most recent request (fails clearly when there was none)."""
        assert self.requests, "the loopback server received no request"
        return self.requests[-1]

    async def _handle(self, request: StarletteRequest) -> StarletteResponse:
        body = await request.body()
        with self._lock:
            self.requests.append(
                RecordedRequest(
                    method=request.method,
                    path=request.url.path,
                    query=dict(request.query_params),
                    headers={k.lower(): v for k, v in request.headers.items()},
                    body=body,
                )
            )
            reply = self._replies.popleft() if self._replies else None
        if reply is None:
            return StarletteResponse(
                b"loopback: no scripted reply left for this request", status_code=418, media_type="text/plain"
            )
        if reply.chunks is None:
            if reply.pause is not None:
                await asyncio.sleep(reply.pause[1])
            return StarletteResponse(
                reply.body, status_code=reply.status, headers=reply.headers, media_type=reply.content_type
            )
        return StreamingResponse(
            _stream(reply.chunks, reply.cut_after, reply.pause),
            status_code=reply.status,
            headers=reply.headers,
            media_type=reply.content_type,
        )


async def _stream(
    chunks: tuple[bytes, ...], cut_after: int | None, pause: tuple[int, float] | None
) -> AsyncIterator[bytes]:
    for index, chunk in enumerate(chunks):
        if cut_after is not None and index >= cut_after:
            raise _ConnectionDropped("scripted connection drop")
        if pause is not None and pause[0] == index:
            await asyncio.sleep(pause[1])
        yield chunk
    if cut_after is not None:
        raise _ConnectionDropped("scripted connection drop")


def status_cases(*extra: int) -> list[tuple[int, type[Exception], bool]]:
    """(HTTP status, expected §6.4 error class, retryable) for every status the brief names."""
    from codeloop.llm import errors as E

    table: dict[int, tuple[type[Exception], bool]] = {
        400: (E.InvalidRequestError, False),
        401: (E.AuthenticationError, False),
        403: (E.AccessDeniedError, False),
        404: (E.NotFoundError, False),
        408: (E.RequestTimeoutError, False),
        413: (E.ContextLengthError, False),
        422: (E.InvalidRequestError, False),
        429: (E.RateLimitError, True),
        500: (E.ServerError, True),
        503: (E.ServerError, True),
    }
    for status in extra:
        table[status] = (E.ServerError, True)
    return [(status, cls, retryable) for status, (cls, retryable) in table.items()]
