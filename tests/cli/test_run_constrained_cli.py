"""``codeloop run --constrained`` (issue 10): the flag reaches the request as a JSON Schema
response format, and a bad value is a one-line usage error."""

from __future__ import annotations

import json
from pathlib import Path

from chat_server import ChatServer, text_reply
from test_run_cli import run

BASE = ["--profile", "text", "--provider", "openai_compatible", "--approval", "never-ask", "--sandbox", "off"]


def test_constrained_on_sends_the_reply_schema_and_reads_the_final_answer(workspace: Path) -> None:
    with ChatServer() as server:
        server.replies.append(text_reply(json.dumps({"final_answer": "nothing to change"})))
        done = run(["check the repo", "--base-url", server.base_url, "--constrained", "on", "--json", *BASE],
                   workspace)
        assert done.returncode == 0, done.stderr
        body = server.requests[-1]
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert any("final_answer" in json.dumps(branch) for branch in schema["anyOf"])
    assert "tools" not in body  # llama.cpp refuses a grammar alongside tools
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(e["kind"] == "assistant_text_end" and "nothing to change" in json.dumps(e["data"]) for e in events)


def test_unknown_constrained_value_is_a_usage_error(workspace: Path) -> None:
    done = run(["x", "--base-url", "http://127.0.0.1:9/v1", "--constrained", "maybe", *BASE], workspace)
    assert done.returncode == 2
    assert "--constrained" in done.stderr and "auto, on or off" in done.stderr
    assert "Traceback" not in done.stderr
