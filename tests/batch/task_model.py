"""A loopback OpenAI-compatible model that works through any number of batch tasks at once.

Stateless, so concurrent sessions get the same script each: the reply depends only on how many
tool results the conversation holds (never on its wording): fewer than two -> a ``shell`` call
writing ``answer.txt`` (so a call cut off by a kill is made again after the resume); two -> a
final text. ``delay`` seconds before each reply make
a task last long enough to be killed midway; ``held`` instructions wait, once they hold a tool
result, until ``release()`` (so a kill surely finds those tasks midway, however slow the machine).
The JSON and SSE bodies are chat_server's.
``calls`` counts the requests per first user message (a task's instruction), for the tests'
bookkeeping only.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))
from chat_server import ChatServer, send, text_reply, tool_reply

ANSWER_COMMAND = "echo solved > answer.txt"
"""What the model runs in each task's workspace: a check ``grep -q solved answer.txt`` passes after it."""


def first_user_text(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


class TaskModel:
    """Serves ``/v1/chat/completions`` on 127.0.0.1; use as a context manager."""

    def __init__(self, delay: float = 0.0, held: frozenset[str] = frozenset()) -> None:
        self.delay = delay
        self.held = held
        self.released = threading.Event()
        self.waiting: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                with model.lock:
                    model.calls[first_user_text(body)] += 1
                if model.delay:
                    time.sleep(model.delay)
                results = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
                if results and first_user_text(body) in model.held:
                    with model.lock:
                        model.waiting[first_user_text(body)] += 1
                    model.released.wait(120)
                # Twice: a call cut off by a kill (its result "interrupted" on resume) is run again.
                reply = tool_reply("shell", {"command": ANSWER_COMMAND}) if results < 2 else text_reply("Done.")
                if body.get("stream"):
                    send(self, 200, "text/event-stream", ChatServer.sse(reply))
                else:
                    send(self, 200, "application/json", json.dumps(ChatServer.completion(reply)).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> TaskModel:
        self.thread.start()
        return self

    def release(self) -> None:
        self.released.set()

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()
