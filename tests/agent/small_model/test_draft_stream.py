"""A draft's stream stops where the rest would not be read (issue 33): the 1.5B model, once its
file was written, wrote the same FILE block again up to the format's four, most of its time. A
loopback server speaks OpenAI's chat-completions stream line by line and records where codeloop
closed the connection."""

from __future__ import annotations

import json
import select
import socket
import threading
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
    """Streams each reply of its queue a line at a time. After ``hold_after`` lines of a reply it
    waits (up to 10 s) for the client to close the connection, so that what a loaded machine
    does to timing cannot decide the outcome: ``closed_at[k]`` is how many lines of reply k had
    gone out when the client closed, None when it read the reply to its end."""

    def __init__(self, replies: list[str], hold_after: int) -> None:
        self.replies = list(replies)
        self.closed_at: list[int | None] = []
        self.bodies: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def client_closed(self, wait: float) -> bool:
                readable, _, _ = select.select([self.connection], [], [], wait)
                return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""

            def do_POST(self) -> None:
                server.bodies.append(json.loads(self.rfile.read(int(self.headers.get("content-length", "0")))))
                text = server.replies.pop(0) if server.replies else "DONE"
                lines = text.splitlines(keepends=True)
                server.closed_at.append(None)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(_chunk({"role": "assistant", "content": ""}))
                for sent, line in enumerate(lines, 1):
                    self.wfile.write(_chunk({"content": line}))
                    self.wfile.flush()
                    if sent == hold_after and self.client_closed(10.0):
                        server.closed_at[-1] = sent
                        return
                usage = {"prompt_tokens": 10, "completion_tokens": len(lines), "total_tokens": 10 + len(lines)}
                self.wfile.write(_chunk({}, "stop", usage=usage) + b"data: [DONE]\n\n")
                self.wfile.flush()

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
    with LineServer([BLOCK * 4, "DONE"], hold_after=lines + 1) as server:
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
    # The connection closed right after the second block's first line: nothing more was waited for.
    assert server.closed_at == [lines + 1, None], server.closed_at
    if budget is not None:  # no usage came for the stopped draft: it is charged as if it ran to its end
        assert budget.spent.tokens >= server.bodies[0]["max_tokens"] + 10 + 1
