"""``codeloop codali run`` end to end against a loopback server speaking OpenAI chat completions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


def chat_answer(content: str | None = None, tool_call: tuple[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    finish = "stop"
    if tool_call:
        message["tool_calls"] = [{"id": "call_1", "type": "function",
                                  "function": {"name": tool_call[0], "arguments": json.dumps(tool_call[1])}}]
        finish = "tool_calls"
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m", "created": 0,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


class ScriptedChatServer(ThreadingHTTPServer):
    def __init__(self, answers: list[dict[str, Any]]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers = answers
        self.bodies: list[dict[str, Any]] = []


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedChatServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        if not self.server.answers:
            self.send_response(500)
            self.end_headers()
            return
        payload = json.dumps(self.server.answers.pop(0)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[ScriptedChatServer]:
    srv = ScriptedChatServer(list(request.param))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


PLAN = "Edit the hash.\n\nplan_targets:\n  - src/auth/hash.ts\n"
NEW_HASH = "export function hash(s: string) { return s.length * 31; }\n"
BRIEF_TO_PASS = [  # librarian brief, plan, one write, the builder's summary, the critic's PASS
    chat_answer("Brief: hash lives in src/auth/hash.ts."),
    chat_answer(PLAN),
    chat_answer(tool_call=("write_file", {"file_path": "src/auth/hash.ts", "content": NEW_HASH})),
    chat_answer("Updated hash."),
    chat_answer("status: PASS"),
]


def codeloop(args: list[str], index_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["CODELOOP_INDEX_DIR"] = str(index_dir)
    return subprocess.run([sys.executable, "-m", "codeloop.cli.main", "codali", "run", *args], capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.mark.parametrize("server", [[
    chat_answer("AGENT_REQUEST v1\nrole: librarian\nrequest_id: l1\nneeds:\n  - type: docdex.symbols\n"
                "    file: src/auth/hash.ts\n"),
    *BRIEF_TO_PASS,
]], indirect=True)
def test_run_passes_and_reports_json_events(repo: Path, _index_dir: Path, server: ScriptedChatServer) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    result = codeloop(["--task", "Make hash stronger", "--repo", str(repo), "--base-url", url, "--model", "m",
                       "--architect-model", "m-arch", "--check", "test -s src/auth/hash.ts", "--builder-tools", "native",
                       "--json"], _index_dir)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1] == {"kind": "result", "data": {
        "status": "PASS", "rounds": 1, "plan_targets": ["src/auth/hash.ts"], "touched_files": ["src/auth/hash.ts"],
        "history_compactions": 0, "reasons": []}}
    assert {"kind": "agent_request", "data": {"role": "librarian", "needs": ["docdex.symbols"]}} in events
    assert (repo / "src/auth/hash.ts").read_text() == NEW_HASH
    assert [b["model"] for b in server.bodies] == ["m", "m", "m-arch", "m", "m", "m"]
    assert any(t["function"]["name"] == "search_code" for t in server.bodies[3]["tools"])
    librarian_second = json.dumps(server.bodies[1]["messages"])
    assert "CODALI_RESPONSE v1" in librarian_second and "hash" in librarian_second


@pytest.mark.parametrize("server", [[chat_answer("Brief.")]], indirect=True)
def test_provider_failure_is_one_line_error(repo: Path, _index_dir: Path, server: ScriptedChatServer) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    result = codeloop(["--task", "x", "--repo", str(repo), "--base-url", url, "--model", "m"], _index_dir)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: the run stopped:")
    assert "Traceback" not in result.stderr


def test_no_key_uses_the_local_model_and_names_its_sizes(repo: Path, _index_dir: Path) -> None:
    # No key and no --base-url: the local llama.cpp model, which has no model "m". The error
    # names the sizes it has and the other ways to pick a provider; nothing is installed.
    result = codeloop(["--task", "x", "--repo", str(repo), "--model", "m"], _index_dir)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "local llama.cpp model" in result.stderr and "no model 'm'" in result.stderr
    assert "--model 0.5b" in result.stderr and "OPENAI_API_KEY" in result.stderr and "--base-url" in result.stderr


@pytest.mark.parametrize("server", [[
    chat_answer("Brief: hash.ts."), chat_answer(PLAN),
    chat_answer(tool_call=("read_file", {"file_path": "src/auth/hash.ts"})),
    chat_answer("status: PASS"),  # the critic's: one builder step, then the critic
]], indirect=True)
def test_limits_reach_the_model_calls(repo: Path, _index_dir: Path, server: ScriptedChatServer) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    result = codeloop(["--task", "x", "--repo", str(repo), "--base-url", url, "--model", "m",
                       "--max-output-tokens", "300", "--max-builder-steps", "1", "--builder-tools", "native", "--json"],
                      _index_dir)
    assert result.returncode == 0, result.stderr
    caps = {b.get("max_tokens", b.get("max_completion_tokens")) for b in server.bodies}
    assert caps == {300}
    assert len(server.bodies) == 4 and "tools" in server.bodies[2] and "tools" not in server.bodies[3]


def test_empty_task(repo: Path, _index_dir: Path) -> None:
    result = codeloop(["--task", "  ", "--repo", str(repo)], _index_dir)
    assert result.returncode == 1 and "--task is empty" in result.stderr


@pytest.mark.parametrize("server", [[
    chat_answer("Brief: hash lives in src/auth/hash.ts."),
    chat_answer(PLAN),
    chat_answer('<tool name="write_file">\n<file_path>src/auth/hash.ts</file_path>\n<content>\n' + NEW_HASH
                + "</content>\n</tool>"),
    chat_answer("Updated hash."),
    chat_answer("status: PASS"),
]], indirect=True)
def test_an_openai_compatible_builder_is_taught_its_tools_as_text(repo: Path, _index_dir: Path,
                                                                   server: ScriptedChatServer) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    result = codeloop(["--task", "Make hash stronger", "--repo", str(repo), "--base-url", url, "--model", "m"],
                      _index_dir)
    assert result.returncode == 0, result.stderr
    assert (repo / "src/auth/hash.ts").read_text() == NEW_HASH
    builder = server.bodies[2]
    assert "tools" not in builder
    assert '<tool name="TOOL_NAME">' in builder["messages"][0]["content"]
    assert "## write_file:" in builder["messages"][0]["content"]


def test_unknown_builder_tools_mode(repo: Path, _index_dir: Path) -> None:
    result = codeloop(["--task", "x", "--repo", str(repo), "--builder-tools", "xml"], _index_dir)
    assert result.returncode == 1 and "--builder-tools 'xml': use native, text or constrained" in result.stderr


@pytest.mark.parametrize("server", [[
    *BRIEF_TO_PASS,
]], indirect=True)
def test_a_terminal_run_shows_what_each_role_says_and_writes_the_transcript(
        repo: Path, _index_dir: Path, server: ScriptedChatServer, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    transcript = tmp_path / "run.txt"
    result = codeloop(["--task", "Make hash stronger", "--repo", str(repo), "--base-url", url, "--model", "m",
                       "--builder-tools", "native", "--transcript", str(transcript)], _index_dir)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert "[librarian] Brief: hash lives in src/auth/hash.ts." in lines
    assert "[architect] Edit the hash." in lines
    assert "[builder] (tool calls: write_file)" in lines
    assert "[critic] status: PASS" in lines
    text = transcript.read_text()
    assert "Task: Make hash stronger" in text and "plan_targets:" in text and "Updated hash." in text


def test_a_transcript_in_a_missing_directory_is_refused_before_the_run(repo: Path, _index_dir: Path,
                                                                        tmp_path: Path) -> None:
    result = codeloop(["--task", "x", "--repo", str(repo), "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                       "--transcript", str(tmp_path / "nope" / "run.txt")], _index_dir)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"the directory {tmp_path / 'nope'} does not exist" in result.stderr
    # Without a key it is refused before the local model is installed or started.
    local = codeloop(["--task", "x", "--repo", str(repo), "--transcript", str(tmp_path / "nope" / "run.txt")],
                     _index_dir)
    assert local.returncode != 0 and "does not exist" in local.stderr and "local llama.cpp" not in local.stderr
