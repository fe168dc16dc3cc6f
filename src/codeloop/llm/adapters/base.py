"""The seam every provider adapter fits (unified-llm spec §2.4, §7.1).

One file per wire API implements :class:`ProviderAdapter`; the HTTP ones get ``complete``
and ``stream`` from :class:`~codeloop.llm.adapters.flow.HTTPAdapter` and only translate.
Contracts:
- ``complete`` returns a :class:`Response` or raises an :class:`~codeloop.llm.errors.SDKError`
  (never an ``httpx`` or ``KeyError``); it does not retry.
- ``stream`` is an async generator: it yields :class:`StreamEvent` values, ending with one
  FINISH event whose ``response`` equals what ``complete`` would have returned. Failures
  before the first event raise; failures after it raise as well (the consumer sees the
  events already yielded). A stream that ends without the provider's final event raises
  :class:`~codeloop.llm.errors.StreamError`. Closing the generator (``aclose``) releases the
  connection.
- Adapters hold their own connection pool and are safe for concurrent use.

Optional methods, looked up with ``getattr`` by the client: ``async close()`` (release
connections, idempotent), ``async initialize()`` (raise ConfigurationError when the adapter
cannot work as configured) and ``supports_tool_choice(mode) -> bool`` (§5.3).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from codeloop.llm.types import Request, Response, StreamEvent


@runtime_checkable
class ProviderAdapter(Protocol):
    """A wire API behind the unified model (§2.4)."""

    @property
    def name(self) -> str:
        """Provider id used for routing, e.g. ``openai``, ``anthropic``, ``gemini``."""
        ...

    async def complete(self, request: Request) -> Response:
        """Send ``request`` and return the whole response. Never retries."""
        ...

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield normalized events, FINISH last. Never retries."""
        ...


@dataclass(frozen=True, slots=True)
class AdapterTimeout:
    """Timeouts an adapter applies to its HTTP calls (§4.7)."""

    connect: float = 10.0
    """Seconds to establish the connection."""
    request: float = 120.0
    """Seconds for a whole non-streaming request/response."""
    stream_read: float = 30.0
    """Longest silence allowed between two chunks of a stream."""
