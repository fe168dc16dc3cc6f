"""A draft's stream stops where the rest would not be read (issue 33): the 1.5B model, once its
file was written, wrote the same FILE block again up to the format's four, most of its time. A
loopback server speaks OpenAI's chat-completions stream line by line and records how far it got
before codeloop closed the connection."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from codeloop.agent import events as ev
from codeloop.agent.budget import Budget, BudgetLimits
from codeloop.agent.config import SessionConfig
from codeloop.agent.session import Session
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.client import Client
from codeloop.profiles import create_profile

BODY = "".join(f"LINE_{i} = {i}\n" for i in range(30))
BLOCK = f"FILE big.py\n```python\n{BODY}```\n"


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    obj = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


class LineServer:
    """Streams each reply of its queue a line at a time (a pause between lines, as a model on a
    CPU writes); ``sent[k]`` is how many lines of reply k went out before the client left."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.sent: list[int] = []
        self.bodies: list[dict[str, Any]] = []
        self.closed_early: list[bool] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                server.bodies.append(json.loads(self.rfile.read(int(self.headers.get("content-length", "0")))))
                text = server.replies.pop(0) if server.replies else "DONE"
                lines = text.splitlines(keepends=True)
                server.sent.append(0)
                server.closed_early.append(False)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    self.wfile.write(_chunk({"role": "assistant", "content": ""}))
                    for line in lines:
                        self.wfile.write(_chunk({"content": line}))
                        self.wfile.flush()
                        server.sent[-1] += 1
                        time.sleep(0.01)
                    usage = {"prompt_tokens": 10, "completion_tokens": len(lines), "total_tokens": 10 + len(lines)}
                    self.wfile.write(_chunk({}, "stop", usage=usage) + b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    server.closed_early[-1] = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> LineServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("limited", [False, True], ids=["no budget", "a token budget"])
async def test_a_draft_writing_its_block_again_is_stopped_there_and_the_file_is_written_once(
        tmp_path: Path, limited: bool) -> None:
    lines = BLOCK.count("\n")
    budget = Budget(BudgetLimits(tokens=10_000_000)) if limited else None
    with LineServer([BLOCK * 4, "DONE"]) as server:
        adapter = OpenAICompatibleAdapter(server.base_url, name="openai_compatible")
        session = Session(create_profile("text"), LocalExecutionEnvironment(str(tmp_path)),
                          SessionConfig(small_model_strategy=True), Client({"openai_compatible": adapter}),
                          budget=budget)
        events: list[ev.SessionEvent] = []
        session.subscribe(events.append)
        try:
            answer = await session.submit("Create big.py")
        finally:
            await adapter.close()
    assert (tmp_path / "big.py").read_text() == BODY
    assert answer.startswith("Changed big.py.")
    drafts = [e.text for e in events if isinstance(e, ev.AssistantTextEnd)]
    assert drafts[0] == BLOCK  # the reply as read: the first block, nothing of the second
    # The server was cut off soon after the second block's first line, long before the fourth block.
    assert server.closed_early[0] and lines + 1 <= server.sent[0] < 2 * lines, server.sent
    assert server.sent[1:] == [1] and not server.closed_early[1]
    if budget is not None:  # no usage came for the stopped draft: it is charged as if it ran to its end
        assert budget.spent.tokens >= server.bodies[0]["max_tokens"] + 10 + 1
