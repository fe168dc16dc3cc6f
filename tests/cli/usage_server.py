"""A loopback provider that reports adversarial usage (issue 36: budgets never overshoot).

One real HTTP server on 127.0.0.1 speaks Anthropic Messages (``POST /v1/messages``) and
Chat Completions (``POST /v1/chat/completions``), JSON or SSE as asked. It counts a
request's input tokens with its own *tokenizer*: ``ratio`` tokens per byte of every string
value in the system prompt, messages and tools (a real byte-level tokenizer spends at most
one token per byte; ``ratio`` = 1 is that worst case, far above the characters/4 guess).
Its output tokens are ``output(max_tokens)``, at most the ``max_tokens`` asked (providers
enforce it); the default reports exactly ``max_tokens``, the most a call may cost.
Anthropic's usage can split the prompt into ``input_tokens``, ``cache_read_input_tokens`` and
``cache_creation_input_tokens`` (``cache_split``), as prompt caching does.

Each request takes the next scripted reply (chat_server's ``text_reply``/``tool_reply``);
when none is left, a shell call that keeps the agent working (or ``reply_for(body)`` decides). ``usages`` records what was
reported per request, so a test can add up what the run really cost. ``hold`` makes request
number N wait until :meth:`release` (a slow call for ``--max-time``).
"""

from __future__ import annotations

import json
import math
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chat_server import ChatServer, tool_reply


def content_bytes(value: Any) -> int:
    """UTF-8 bytes of every string value in ``value`` (keys not counted)."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, dict):
        return sum(content_bytes(v) for v in value.values())
    if isinstance(value, list):
        return sum(content_bytes(v) for v in value)
    return 0


@dataclass(frozen=True)
class Reported:
    """The usage reported for one request."""

    input: int
    """All prompt tokens (cache reads and writes included)."""
    output: int
    cache_read: int = 0
    cache_write: int = 0
    max_tokens: int | None = None
    """The max_tokens the request asked for."""


class UsageServer:
    """Serves scripted replies with the usage of its tokenizer (module docstring)."""

    def __init__(self, ratio: Fraction = Fraction(1), output: Callable[[int], int] | None = None,
                 cache_split: tuple[Fraction, Fraction] = (Fraction(0), Fraction(0))) -> None:
        self.ratio, self.output, self.cache_split = ratio, output or (lambda most: most), cache_split
        self.replies: deque[dict[str, Any]] = deque()
        self.bodies: list[dict[str, Any]] = []
        self.usages: list[Reported] = []
        self.reply_for: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        """Chooses the reply from the request body instead of the script (concurrent sessions)."""
        self.hold: int | None = None
        """Index of the request that waits for :meth:`release`."""
        self._released = threading.Event()
        self.held = threading.Event()
        """Set once the held request arrived."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                index = len(server.bodies)
                server.bodies.append(body)
                if server.hold == index:
                    server.held.set()
                    server._released.wait(120)
                    return
                reply = server.reply_for(body) if server.reply_for else server.replies.popleft() if server.replies else tool_reply(
                    "shell", {"command": f"echo step {index}"}, call_id=f"call_{index}")
                anthropic = self.path.split("?")[0].endswith("/messages")
                usage = server.count(body, anthropic)
                server.usages.append(usage)
                if anthropic:
                    frames = anthropic_frames(reply, usage)
                    if body.get("stream"):
                        self._send(200, "text/event-stream", b"".join(frames))
                    else:
                        self._send(200, "application/json", json.dumps(anthropic_message(reply, usage)).encode())
                elif body.get("stream"):
                    sse = ChatServer.sse(reply).replace(
                        b'"usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}',
                        json.dumps({"usage": chat_usage(usage)})[1:-1].encode())
                    self._send(200, "text/event-stream", sse)
                else:
                    answer = ChatServer.completion(reply)
                    answer["usage"] = chat_usage(usage)
                    self._send(200, "application/json", json.dumps(answer).encode())

            def _send(self, status: int, ctype: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def count(self, body: dict[str, Any], anthropic: bool) -> Reported:
        """The usage this server reports for ``body``."""
        prompt = math.ceil(self.ratio * sum(content_bytes(body.get(k)) for k in ("system", "messages", "tools")))
        most = body.get("max_tokens") or 4096
        output = max(0, min(self.output(most), most))
        if not anthropic:
            return Reported(prompt, output, max_tokens=body.get("max_tokens"))
        read, write = (math.floor(share * prompt) for share in self.cache_split)
        write = min(write, prompt - read)
        return Reported(prompt, output, read, write, body.get("max_tokens"))

    def release(self) -> None:
        self._released.set()

    def __enter__(self) -> UsageServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()


def chat_usage(usage: Reported) -> dict[str, int]:
    return {"prompt_tokens": usage.input, "completion_tokens": usage.output, "total_tokens": usage.input + usage.output}


def _anthropic_usage(usage: Reported) -> dict[str, int]:
    return {"input_tokens": usage.input - usage.cache_read - usage.cache_write, "output_tokens": usage.output,
            "cache_read_input_tokens": usage.cache_read, "cache_creation_input_tokens": usage.cache_write}


def _blocks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply["content"]}] if reply.get("content") else []
    for call in reply.get("tool_calls") or []:
        blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                       "input": json.loads(call["function"]["arguments"])})
    return blocks


def anthropic_message(reply: dict[str, Any], usage: Reported) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "scripted", "content": _blocks(reply),
            "stop_reason": "tool_use" if reply.get("tool_calls") else "end_turn", "stop_sequence": None,
            "usage": _anthropic_usage(usage)}


def _frame(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\n".encode() + b"data: " + json.dumps(data).encode() + b"\n\n"


def anthropic_frames(reply: dict[str, Any], usage: Reported) -> list[bytes]:
    first = {**_anthropic_usage(usage), "output_tokens": 1}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "scripted", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": first}
    frames = [_frame({"type": "message_start", "message": message})]
    for index, block in enumerate(_blocks(reply)):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        frames += [_frame({"type": "content_block_start", "index": index, "content_block": start}),
                   _frame({"type": "content_block_delta", "index": index, "delta": delta}),
                   _frame({"type": "content_block_stop", "index": index})]
    stop = "tool_use" if reply.get("tool_calls") else "end_turn"
    frames += [_frame({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                       "usage": {"output_tokens": usage.output}}),
               _frame({"type": "message_stop"})]
    return frames
