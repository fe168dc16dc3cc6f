"""A real OpenAI-compatible Chat Completions server on 127.0.0.1 serving scripted replies.

Used to test the ``codeloop`` command end to end: the CLI's adapter talks HTTP (JSON or
SSE ``chat.completion.chunk`` streams ending in ``data: [DONE]``) to this server exactly
as it would to llama.cpp's ``llama-server``. Each request takes the next scripted reply
and is recorded.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def text_reply(text: str) -> dict[str, Any]:
    """An assistant message with text only."""
    return {"content": text}


def tool_reply(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    """An assistant message with one structured tool call."""
    return {"content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def error_reply(status: int, message: str) -> dict[str, Any]:
    """An HTTP error with an OpenAI-style error body."""
    return {"status": status, "error": {"message": message, "type": "invalid_request_error", "code": status}}


def send(handler: BaseHTTPRequestHandler, status: int, ctype: str, data: bytes) -> None:
    """One whole answer with its length."""
    handler.send_response(status)
    handler.send_header("content-type", ctype)
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class ChatServer:
    """Serves ``/v1/chat/completions`` from a queue of replies; records request bodies."""

    def __init__(self) -> None:
        self.replies: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.raw_requests: list[bytes] = []
        """The request bodies as sent, byte for byte."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                server.raw_requests.append(raw)
                body = json.loads(raw)
                server.requests.append(body)
                reply = server.replies.popleft() if server.replies else text_reply("(script exhausted)")
                if "status" in reply:
                    self._send(reply["status"], "application/json", json.dumps({"error": reply["error"]}).encode())
                elif body.get("stream"):
                    self._send(200, "text/event-stream", server.sse(reply))
                else:
                    self._send(200, "application/json", json.dumps(server.completion(reply)).encode())

            def _send(self, status: int, ctype: str, data: bytes) -> None:
                send(self, status, ctype, data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @staticmethod
    def completion(reply: dict[str, Any]) -> dict[str, Any]:
        finish = "tool_calls" if reply.get("tool_calls") else "stop"
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
                "choices": [{"index": 0, "message": {"role": "assistant", **reply}, "finish_reason": finish}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    @staticmethod
    def sse(reply: dict[str, Any]) -> bytes:
        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
            obj = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            return b"data: " + json.dumps(obj).encode() + b"\n\n"

        out = [chunk({"role": "assistant", "content": ""})]
        text = reply.get("content") or ""
        out += [chunk({"content": text[i:i + 5]}) for i in range(0, len(text), 5)]
        for index, call in enumerate(reply.get("tool_calls") or []):
            out.append(chunk({"tool_calls": [{"index": index, **call}]}))
        out.append(chunk({}, "tool_calls" if reply.get("tool_calls") else "stop"))
        usage = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
                 "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
        out.append(b"data: " + json.dumps(usage).encode() + b"\n\n")
        out.append(b"data: [DONE]\n\n")
        return b"".join(out)

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class HitServer:
    """A plain HTTP server on 127.0.0.1 that answers ``pong`` to every GET and records its
    path: what a command inside (or outside) the sandbox managed to reach."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(200)
                self.send_header("content-length", "4")
                self.end_headers()
                self.wfile.write(b"pong")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/probe"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def fetch_command(self) -> str:
        """A shell command that GETs :attr:`url` with Python's urllib and prints the body."""
        return f"python3 -c \"import urllib.request as u; print(u.urlopen('{self.url}', timeout=3).read().decode())\""

    def __enter__(self) -> HitServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
