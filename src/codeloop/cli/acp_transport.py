"""The wire of ``codeloop acp`` (``cli/acp.py``): newline-delimited JSON-RPC on stdin and the
protocol's file descriptor, as the SDK's ``Transport`` (``acp._transport``), answering the
malformed input the SDK's own transport would drop silently or choke on."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any


class ProtocolTransport:
    """Newline-delimited JSON-RPC over a stream pair, answering what the SDK's transport would
    drop or choke on: a line that is not JSON gets a parse error (-32700), a value that is not
    a JSON-RPC 2.0 message an invalid request (-32600); the next line is read either way."""

    def __init__(self, reader: asyncio.StreamReader, write: Callable[[bytes], Awaitable[None]]) -> None:
        self.reader, self.write = reader, write
        self.lock = asyncio.Lock()
        """One message at a time: lines never interleave."""
        self.unanswered: set[Any] = set()
        self.answered = asyncio.Event()
        self.on_eof: Callable[[], Awaitable[None]] | None = None
        """Called when stdin ends (the editor is gone): stops what runs, so every request read
        gets its answer before the server exits."""

    async def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        if "method" not in message:
            self.unanswered.discard(message.get("id"))
            self.answered.set()
        async with self.lock:
            await self.write(line.encode())

    async def _error(self, request_id: Any, code: int, message: str, detail: str) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message,
                                                                        "data": {"details": detail}}})

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self.reader.readline()
            except ValueError:  # longer than the reader's limit: the rest of it is read as lines
                await self._error(None, -32700, "Parse error", "message too long")
                continue
            if not line:
                if self.on_eof is not None:
                    await self.on_eof()
                while self.unanswered:
                    self.answered.clear()
                    await self.answered.wait()
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                await self._error(None, -32700, "Parse error", str(exc))
                continue
            problem = message_problem(message)
            if problem is None:
                if "method" in message and "id" in message:
                    self.unanswered.add(message["id"])
                return dict(message)
            request_id = message.get("id") if isinstance(message, dict) else None
            valid_id = isinstance(request_id, str | int) and not isinstance(request_id, bool)
            await self._error(request_id if valid_id else None, -32600, "Invalid request", problem)

    async def close(self) -> None:
        """Nothing to close: stdin and the protocol descriptor end with the process."""


def message_problem(message: Any) -> str | None:
    """Why ``message`` is not a JSON-RPC 2.0 request, notification or response; None if it is."""
    if not isinstance(message, dict):
        return "a message must be a JSON object"
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if "id" in message:
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, str | int | type(None)):
            return "id must be a string, a number or null"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method must be a string"
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return "params must be an object or an array"
        return None
    if "id" not in message or not ("result" in message or "error" in message):
        return "a message needs a method, or an id with a result or an error"
    return None


async def streams(protocol_fd: int) -> tuple[asyncio.StreamReader, Any]:
    """A reader of stdin and an async ``write(bytes)`` to ``protocol_fd``. Pipes (what an editor
    gives) are read and written by the event loop; what the loop cannot watch (a regular file,
    ``/dev/null``) is read by a thread and written directly."""
    import stat
    import threading

    def watchable(fd: int) -> bool:  # epoll takes pipes and sockets; not files, not /dev/null
        mode = os.fstat(fd).st_mode
        return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    if watchable(sys.stdin.fileno()):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    else:
        def feed() -> None:
            for line in sys.stdin.buffer:
                loop.call_soon_threadsafe(reader.feed_data, line)
            loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=feed, daemon=True).start()
    out = os.fdopen(protocol_fd, "wb", buffering=0)
    if not watchable(protocol_fd):
        async def write_file(data: bytes) -> None:
            out.write(data)

        return reader, write_file
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write_pipe(data: bytes) -> None:
        writer.write(data)
        await writer.drain()

    return reader, write_pipe
