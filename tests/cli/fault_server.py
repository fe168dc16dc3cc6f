"""A loopback provider that misbehaves on purpose, then answers properly (issue 23).

One real HTTP server on 127.0.0.1 speaks three wire APIs by path: OpenAI Responses
(``POST /v1/responses``), Anthropic Messages (``POST /v1/messages``) and Chat Completions
(``POST /v1/chat/completions``), streaming SSE in each provider's documented shape. Each
request first takes the next queued *fault*, and only when none is left the next scripted
reply (``text_reply``/``tool_reply`` of chat_server). Faults:

- ``status(429, {"retry-after": "1"})``: an error answer with that status and headers;
- ``RESET``: the connection is reset (TCP RST) before any byte of the answer;
- ``cut(n)``: a 200 stream of the reply that is reset after ``n`` SSE events.

``requests`` records (path, fault or "ok") per request.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chat_server import ChatServer


@dataclass(frozen=True)
class Fault:
    """One misbehaviour: an error status, a reset, or a stream cut after ``cut_after`` events."""

    name: str
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None


def status(code: int, headers: dict[str, str] | None = None) -> Fault:
    return Fault(f"status {code}", status=code, headers=headers or {})


def cut(events: int) -> Fault:
    return Fault(f"cut after {events}", cut_after=events)


RESET = Fault("reset")

ERROR_BODIES: dict[str, Callable[[int], dict[str, Any]]] = {
    "/v1/messages": lambda code: {"type": "error", "error": {
        "type": {429: "rate_limit_error", 529: "overloaded_error"}.get(code, "api_error"), "message": f"injected {code}"}},
    "/v1/responses": lambda code: {"error": {"message": f"injected {code}", "type": "server_error", "code": None}},
    "/v1/chat/completions": lambda code: {"error": {"message": f"injected {code}", "type": "server_error"}},
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


def chat_frames(reply: dict[str, Any]) -> list[bytes]:
    """Chat Completions chunks (chat_server's), one SSE event per element."""
    return [f + b"\n\n" for f in ChatServer.sse(reply).split(b"\n\n") if f]


FRAMES: dict[str, Callable[[dict[str, Any]], list[bytes]]] = {
    "/v1/responses": responses_frames, "/v1/messages": anthropic_frames, "/v1/chat/completions": chat_frames,
}


class FaultServer:
    """Serves the three APIs: queued faults first, then scripted replies (streamed)."""

    def __init__(self) -> None:
        self.faults: deque[Fault] = deque()
        self.replies: deque[dict[str, Any]] = deque()
        self.requests: list[tuple[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                path = self.path.split("?")[0]
                if path not in FRAMES or not body.get("stream"):
                    self._answer(404, {"error": {"message": f"fault server: no streaming {path}"}})
                    return
                fault = server.faults.popleft() if server.faults else None
                server.requests.append((path, fault.name if fault else "ok"))
                if fault is not None and fault.status:
                    self._answer(fault.status, ERROR_BODIES[path](fault.status), fault.headers)
                    return
                if fault is not None and fault.cut_after is None:
                    self._reset()
                    return
                reply = server.replies.popleft() if server.replies else {"content": "(script exhausted)"}
                frames = FRAMES[path](reply)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for index, frame in enumerate(frames):
                    if fault is not None and index == fault.cut_after:
                        self._reset()
                        return
                    self.wfile.write(frame)
                    self.wfile.flush()
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
