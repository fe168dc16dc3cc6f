"""Server-Sent Events parsing over a byte stream (unified-llm spec §7.7, WHATWG SSE).

:class:`SSEParser` is incremental: feed it chunks split anywhere (even inside a
``\\r\\n`` or a multi-byte character) and it returns complete events. It follows the
WHATWG event-stream rules: ``event:``, ``data:`` (several lines joined with ``\\n``),
``id:``, ``retry:``, comments (``:``), one optional space after the colon, CR, LF or CRLF
line ends, an event dispatched on a blank line, and an event without data not dispatched.
An event left unterminated when the stream ends is dropped, as the standard says: a cut
stream therefore never yields a half event, and adapters detect the cut by the missing
final event (:func:`require_final_event`).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import NamedTuple

from codeloop.llm.errors import StreamError


class SSEEvent(NamedTuple):
    """One dispatched server-sent event.

    A NamedTuple rather than a frozen dataclass: it is as immutable and builds ~2x faster,
    which matters at hundreds of thousands of events per second (benchmarks/llm_overhead.py).
    """

    event: str
    """The ``event:`` field, ``message`` when absent."""
    data: str
    """The ``data:`` lines joined with ``\\n``."""
    id: str | None = None
    """The last ``id:`` seen, if any."""
    retry: int | None = None
    """The ``retry:`` value (ms) sent with this event, if any."""


class SSEParser:
    """Incremental SSE parser: ``feed(bytes) -> list[SSEEvent]``."""

    __slots__ = ("_buffer", "_data", "_event", "_last_id", "_retry")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse ``chunk`` and return the events it completes, in order."""
        buffer = self._buffer + chunk if self._buffer else chunk
        if b"\r" in buffer:
            # A trailing CR may be the first half of CRLF: keep it until the next chunk. The
            # complete lines get LF ends, so one loop below reads every line-end style.
            cut = max(buffer.rfind(b"\n"), buffer.rfind(b"\r", 0, len(buffer) - 1))
            block = buffer[: cut + 1].replace(b"\r\n", b"\n").replace(b"\r", b"\n")[:-1]
        else:  # LF only: what every provider sends
            cut = buffer.rfind(b"\n")
            block = buffer[:cut]
        self._buffer = buffer[cut + 1 :]
        if cut < 0:
            return []
        events: list[SSEEvent] = []
        data = self._data
        # LF never occurs inside a UTF-8 sequence, so the block decodes as a whole.
        for line in block.decode("utf-8", "replace").split("\n"):
            if not line:
                if data:
                    events.append(SSEEvent(self._event or "message", "\n".join(data), self._last_id, self._retry))
                    data = self._data = []
                    self._retry = None
                self._event = ""
            elif line[:5] == "data:":
                data.append(line[6:] if line[5:6] == " " else line[5:])
            else:
                self._field(line.encode("utf-8"))
        return events

    def finish(self) -> list[SSEEvent]:
        """End of stream: a held-back trailing CR ends its line; an unterminated event is dropped."""
        if self._buffer.endswith(b"\r"):
            return self.feed(b"\n")
        return []

    def _field(self, line: bytes) -> None:
        if line[0] == 0x3A:  # ":" starts a comment
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self._retry = int(value)


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    """Yield the events of an async byte stream (e.g. ``httpx.Response.aiter_bytes()``)."""
    parser = SSEParser()
    async for chunk in chunks:
        for event in parser.feed(chunk):
            yield event
    for event in parser.finish():
        yield event


def require_final_event(provider: str, seen_final: bool, expected: str) -> None:
    """Raise :class:`StreamError` when a stream ended before its final event.

    ``expected`` names the event the wire format ends with (``data: [DONE]``,
    ``message_stop``, ``response.completed``) so the message says what was missing.
    """
    if not seen_final:
        raise StreamError(
            f"{provider} stream ended before its final event ({expected}); "
            "the connection was cut or the server stopped mid-response"
        )
