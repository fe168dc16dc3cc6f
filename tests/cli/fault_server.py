"""A loopback provider that misbehaves on purpose, then answers properly (issue 23).

One real HTTP server on 127.0.0.1 speaks four wire APIs by path: OpenAI Responses
(``POST /v1/responses``), Anthropic Messages (``POST /v1/messages``), Chat Completions
(``POST /v1/chat/completions``) and Gemini (``POST /v1beta/models/M:streamGenerateContent``),
streaming SSE in each provider's documented shape. Each
request first takes the next queued *fault*, and only when none is left the next scripted
reply (``text_reply``/``tool_reply`` of chat_server). Faults:

- ``status(429, {"retry-after": "1"})``: an error answer with that status and headers;
- ``RESET``: the connection is reset (TCP RST) before any byte of the answer;
- ``cut(n)``: a 200 stream of the reply that is reset after ``n`` SSE events;
- ``storm(codes)``: one error answer per status, ``retry-after: 0`` so tests stay fast;
- ``BYTE_BY_BYTE``: the reply streamed one byte per write, each flushed and a little apart;
- ``GARBAGE``: the reply with comments, unknown fields and stray lines between its events
  (all ignored by a WHATWG parser);
- ``not_json(n)``: the reply with its ``n``-th event's data cut mid-object;
- ``NO_DATA_PREFIX``: the reply whose last event lost its ``data:`` prefix (so it is never
  dispatched: the stream ends without its final event);
- ``huge(size)``: a 200 stream of one text event of ``size`` bytes;
- ``raw(body, content_length)``: a 200 JSON answer of exactly ``body``, announcing
  ``content_length`` bytes (a lie when it differs), then the connection closes.

Requests without ``stream`` (``complete()``) get the same faults, then a Chat Completions
JSON reply. ``requests`` records (path, fault or "ok") per request, ``bodies`` each request body.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chat_server import ChatServer


@dataclass(frozen=True)
class Fault:
    """One misbehaviour; the fields that are set say which (see the module docstring)."""

    name: str
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    reset: bool = False
    cut_after: int | None = None
    rewrite: Callable[[list[bytes]], list[bytes]] | None = None
    """Changes the reply's SSE frames before they are sent."""
    byte_by_byte: bool = False
    huge: int = 0
    body: bytes | None = None
    content_length: int | None = None


def status(code: int, headers: dict[str, str] | None = None) -> Fault:
    return Fault(f"status {code}", status=code, headers=headers or {})


def cut(events: int) -> Fault:
    return Fault(f"cut after {events}", cut_after=events)


def storm(codes: list[int]) -> list[Fault]:
    return [status(code, {"retry-after": "0"}) for code in codes]


def _with_garbage(frames: list[bytes]) -> list[bytes]:
    noise = b": keep-alive\n\nnonsense without a colon\nx-unknown-field: 1\nretry: soon\n\n"
    return [noise + frame for frame in frames] + [noise]


def _not_json(index: int) -> Callable[[list[bytes]], list[bytes]]:
    def rewrite(frames: list[bytes]) -> list[bytes]:
        head, _, data = frames[index].partition(b"data: ")
        return [*frames[:index], head + b"data: " + data[: len(data) // 2] + b"\n\n", *frames[index + 1:]]
    return rewrite


def _no_data_prefix(frames: list[bytes]) -> list[bytes]:
    return [*frames[:-1], frames[-1].replace(b"data: ", b"", 1)]


def not_json(index: int) -> Fault:
    return Fault(f"event {index} not JSON", rewrite=_not_json(index))


def huge(size: int) -> Fault:
    return Fault(f"{size} byte event", huge=size)


def raw(body: bytes, content_length: int | None = None) -> Fault:
    length = len(body) if content_length is None else content_length
    return Fault(f"raw body of {len(body)} bytes, content-length {length}", body=body, content_length=length)


RESET = Fault("reset", reset=True)
BYTE_BY_BYTE = Fault("byte by byte", byte_by_byte=True)
GARBAGE = Fault("garbage lines", rewrite=_with_garbage)
NO_DATA_PREFIX = Fault("no data prefix", rewrite=_no_data_prefix)

ERROR_BODIES: dict[str, Callable[[int], dict[str, Any]]] = {
    "/v1/messages": lambda code: {"type": "error", "error": {
        "type": {429: "rate_limit_error", 529: "overloaded_error"}.get(code, "api_error"), "message": f"injected {code}"}},
    "/v1/responses": lambda code: {"error": {"message": f"injected {code}", "type": "server_error", "code": None}},
    "/v1/chat/completions": lambda code: {"error": {"message": f"injected {code}", "type": "server_error"}},
    "/gemini": lambda code: {"error": {"code": code, "message": f"injected {code}", "status": "INTERNAL"}},
}


def _frame(data: dict[str, Any], event: str | None = None) -> bytes:
    return (f"event: {event}\n" if event else "").encode() + b"data: " + json.dumps(data).encode() + b"\n\n"


def responses_frames(reply: dict[str, Any]) -> list[bytes]:
    """OpenAI Responses streaming events for a chat_server reply."""
    items: list[dict[str, Any]] = []
    if reply.get("content"):
        items.append({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": reply["content"], "annotations": []}]})
    for call in reply.get("tool_calls") or []:
        items.append({"type": "function_call", "id": f"fc_{call['id']}", "call_id": call["id"], "status": "completed",
                      "name": call["function"]["name"], "arguments": call["function"]["arguments"]})
    body = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "scripted",
            "output": items, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}
    frames: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        frames.append(_frame({"type": kind, "sequence_number": len(frames), **fields}, kind))

    emit("response.created", response={**body, "status": "in_progress", "output": [], "usage": None})
    for index, item in enumerate(items):
        ids = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            emit("response.output_item.added", output_index=index, item={**item, "content": []})
            text = item["content"][0]["text"]
            for i in range(0, len(text), 5):
                emit("response.output_text.delta", **ids, content_index=0, delta=text[i:i + 5])
            emit("response.output_text.done", **ids, content_index=0, text=text)
        else:
            emit("response.output_item.added", output_index=index, item={**item, "arguments": ""})
            emit("response.function_call_arguments.delta", **ids, delta=item["arguments"])
            emit("response.function_call_arguments.done", **ids, arguments=item["arguments"])
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=body)
    return frames


def anthropic_frames(reply: dict[str, Any]) -> list[bytes]:
    """Anthropic Messages streaming events for a chat_server reply."""
    blocks: list[dict[str, Any]] = []
    if reply.get("content"):
        blocks.append({"type": "text", "text": reply["content"]})
    for call in reply.get("tool_calls") or []:
        blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                       "input": json.loads(call["function"]["arguments"])})
    stop = "tool_use" if reply.get("tool_calls") else "end_turn"
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "scripted", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
    frames = [_frame({"type": "message_start", "message": message}, "message_start")]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"][i:i + 5]} for i in range(0, len(block["text"]), 5)]
        else:
            start = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        frames.append(_frame({"type": "content_block_start", "index": index, "content_block": start},
                             "content_block_start"))
        frames += [_frame({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta")
                   for d in deltas]
        frames.append(_frame({"type": "content_block_stop", "index": index}, "content_block_stop"))
    frames.append(_frame({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                          "usage": {"output_tokens": 5}}, "message_delta"))
    frames.append(_frame({"type": "message_stop"}, "message_stop"))
    return frames


def gemini_frames(reply: dict[str, Any]) -> list[bytes]:
    """Gemini streamGenerateContent chunks for a chat_server reply: text, then calls."""
    parts: list[dict[str, Any]] = [{"text": reply["content"]}] if reply.get("content") else []
    parts += [{"functionCall": {"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])}}
              for c in reply.get("tool_calls") or []]
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    return [_frame({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                                    "index": 0}], "usageMetadata": usage, "modelVersion": "scripted"})]


def chat_frames(reply: dict[str, Any]) -> list[bytes]:
    """Chat Completions chunks (chat_server's), one SSE event per element."""
    return [f + b"\n\n" for f in ChatServer.sse(reply).split(b"\n\n") if f]


FRAMES: dict[str, Callable[[dict[str, Any]], list[bytes]]] = {
    "/v1/responses": responses_frames, "/v1/messages": anthropic_frames, "/v1/chat/completions": chat_frames,
    "/gemini": gemini_frames,
}
GEMINI_PATH = re.compile(r"/v1beta/models/[^/:]+:streamGenerateContent")


class FaultServer:
    """Serves the three APIs: queued faults first, then scripted replies (streamed)."""

    def __init__(self) -> None:
        self.faults: deque[Fault] = deque()
        self.replies: deque[dict[str, Any]] = deque()
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                path = self.path.split("?")[0]
                stream = bool(body.get("stream"))
                if GEMINI_PATH.fullmatch(path):
                    path, stream = "/gemini", True
                server.bodies.append(body)
                if path not in FRAMES:
                    self._answer(404, {"error": {"message": f"fault server: no {path}"}})
                    return
                fault = server.faults.popleft() if server.faults else None
                server.requests.append((path, fault.name if fault else "ok"))
                if fault is not None and fault.status:
                    self._answer(fault.status, ERROR_BODIES[path](fault.status), fault.headers)
                elif fault is not None and fault.reset:
                    self._reset()
                elif fault is not None and fault.body is not None:
                    self._raw(fault.body, fault.content_length)
                elif fault is not None and fault.huge:
                    self._huge(fault.huge)
                else:
                    reply = server.replies.popleft() if server.replies else {"content": "(script exhausted)"}
                    if stream:
                        self._stream(FRAMES[path](reply), fault)
                    else:
                        self._answer(200, ChatServer.completion(reply))

            def _stream(self, frames: list[bytes], fault: Fault | None) -> None:
                if fault is not None and fault.rewrite is not None:
                    frames = fault.rewrite(frames)
                self._start_stream()
                for index, frame in enumerate(frames):
                    if fault is not None and index == fault.cut_after:
                        self._reset()
                        return
                    for piece in ([frame[i:i + 1] for i in range(len(frame))]
                                  if fault is not None and fault.byte_by_byte else [frame]):
                        self.wfile.write(piece)
                        self.wfile.flush()
                        if len(piece) == 1:
                            time.sleep(0.0002)  # apart: each byte its own TCP segment
                self.close_connection = True

            def _start_stream(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _huge(self, size: int) -> None:
                self._start_stream()
                self.wfile.write(b'data: {"type": "content_block_delta", "index": 0, "delta": {"type": '
                                 b'"text_delta", "text": "')
                block = b"x" * (1 << 20)
                try:
                    for _ in range(size >> 20):
                        self.wfile.write(block)
                    self.wfile.write(b'"}}\n\n')
                    self.wfile.flush()
                except OSError:
                    pass  # the client stopped reading, as it should
                self.close_connection = True

            def _raw(self, data: bytes, length: int | None) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(length))
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                except OSError:
                    pass  # the client stopped reading (a refused 50 MB body)
                self.close_connection = True

            def _answer(self, code: int, obj: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _reset(self) -> None:
                # SO_LINGER 0: close() sends a TCP RST, a real "connection reset by peer".
                self.wfile.flush()
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
