"""A stand-in for llama.cpp's ``llama-server`` (issue 23): serves ``/health`` and streamed
``/v1/chat/completions`` (chat_server's SSE) on ``--port``. It answers the scripted replies
in ``$FAKE_LLAMA_SCRIPT`` (a JSON list) in turn, keeping its place in ``<script>.next``, and
exits right after a reply marked ``"crash": true``: an embedded server dying mid-session.
Each start appends its command line (a JSON list) to ``<script>.argv`` (issue 33: which
flags reach llama-server), and each request body a line to ``<script>.requests``."""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from chat_server import ChatServer, send

SCRIPT = Path(os.environ["FAKE_LLAMA_SCRIPT"])
PLACE = SCRIPT.with_suffix(".next")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(200, "application/json", b'{"status": "ok"}' if self.path == "/health" else b"{}")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        with SCRIPT.with_suffix(".requests").open("ab") as log:  # one request body a line (issue 33)
            log.write(body.replace(b"\n", b" ") + b"\n")
        place = int(PLACE.read_text()) if PLACE.exists() else 0
        replies = json.loads(SCRIPT.read_text())
        reply = replies[min(place, len(replies) - 1)]
        PLACE.write_text(str(place + 1))
        answer = {k: v for k, v in reply.items() if k != "crash"}
        if not json.loads(body or b"{}").get("stream"):  # the small-model strategy's drafts
            self._send(200, "application/json", json.dumps(ChatServer.completion(answer)).encode())
        else:
            self._send(200, "text/event-stream", ChatServer.sse(answer))
        if reply.get("crash"):
            self.wfile.flush()
            os._exit(1)

    def _send(self, status: int, ctype: str, data: bytes) -> None:
        send(self, status, ctype, data)

if __name__ == "__main__":
    with open(SCRIPT.with_suffix(".argv"), "a", encoding="utf-8") as record:
        record.write(json.dumps(sys.argv[1:]) + "\n")
    HTTPServer(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1])), Handler).serve_forever()
