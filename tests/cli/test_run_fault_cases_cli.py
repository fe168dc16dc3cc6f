"""The rest of issue 23's provider faults, black-box through ``codeloop run`` where a user
meets them (the loopback fault server, tests/cli/fault_server.py, per wire API where the
wire differs): 5xx storms within and beyond the retry budget, a stream reset after some
text, byte-by-byte streams, malformed SSE, a 50 MB answer; and, for the non-streaming path
(``complete()``, which ``codeloop run`` does not take), truncated JSON and lying
Content-Length through the real adapter and the loop's retries."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest
from chat_server import text_reply, tool_reply
from fault_server import BYTE_BY_BYTE, GARBAGE, NO_DATA_PREFIX, FaultServer, cut, huge, not_json, raw, storm
from test_run_cli import CODELOOP, isolated_env
from test_run_faults_cli import APIS

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.agent.model_calls import call_model
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.client import Client
from codeloop.llm.errors import NetworkError, ProviderError, SDKError
from codeloop.llm.types import Message, Request
from codeloop.sessions.log import load_events

pytestmark = pytest.mark.slow

TOOL = tool_reply("shell", {"command": "echo ran >> log.txt"}) | {"content": "I will append now."}


def args_for(server: FaultServer, api: str, cwd: Path, *extra: str) -> tuple[list[str], dict[str, str]]:
    provider, suffix, key = APIS[api]
    args = [CODELOOP, "run", "append a line to log.txt", "--cwd", str(cwd), "--provider", provider,
            "--base-url", server.base_url + suffix, "--approval", "never-ask", "--sandbox", "off", *extra]
    if api != "chat_completions":
        args += ["--profile", provider]
    return args, isolated_env(cwd, **{key: "test-key"})


def run(server: FaultServer, api: str, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args, env = args_for(server, api, cwd, *extra)
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)


def events_of(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines()]


def finished_once(done: subprocess.CompletedProcess[str], cwd: Path) -> None:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert (cwd / "log.txt").read_text() == "ran\n"  # the tool ran exactly once


def session_id(done: subprocess.CompletedProcess[str]) -> str:
    found = re.search(r"codeloop run --resume ([0-9a-f-]+)", done.stderr)
    assert found, done.stderr
    return found.group(1)


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_5xx_storm_within_the_retry_budget_then_the_task_finishes(api: str, tmp_path: Path) -> None:
    with FaultServer() as server:
        server.faults.extend(storm([500, 502, 503, 500, 502, 503]))  # 6: the default budget
        server.replies.extend([TOOL, text_reply("Appended.")])
        done = run(server, api, tmp_path, "--json")
    finished_once(done, tmp_path)
    retries = [e["data"] for e in events_of(done) if e["kind"] == "retry"]
    assert [(r["attempt"], r["cause"]) for r in retries] == [
        (n + 1, f"server error (HTTP {code})") for n, code in enumerate([500, 502, 503, 500, 502, 503])]
    assert [r[1] for r in server.requests][6:] == ["ok", "ok"]


def test_a_5xx_storm_beyond_the_budget_is_a_clear_error_and_the_session_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODELOOP_STATE_DIR", str(tmp_path.parent / "state"))
    with FaultServer() as server:
        server.faults.extend(storm([502] * 10))
        server.replies.extend([TOOL, text_reply("Appended.")])
        done = run(server, "chat_completions", tmp_path, "--max-retries", "3")
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert "server error (HTTP 502) on each of 4 tries: openai_compatible returned HTTP 502: injected 502" in done.stderr
        assert len(server.requests) == 4 and not (tmp_path / "log.txt").exists()
        sid = session_id(done)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a torn or unreadable line would warn
            kinds = [e.kind for e in load_events(sid)]
        assert kinds[-2:] == ["error", "session_end"]
        server.faults.clear()
        resumed = run(server, "chat_completions", tmp_path, "--resume", sid)
    finished_once(resumed, tmp_path)
    assert [e.kind for e in load_events(sid)].count("tool_call_end") == 1


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_reset_after_some_text_discards_it_asks_again_and_the_tool_runs_once(api: str, tmp_path: Path) -> None:
    with FaultServer() as server:
        server.faults.append(cut(3))  # after the first text delta, before the tool call
        server.replies.extend([TOOL, TOOL, text_reply("Appended.")])
        done = run(server, api, tmp_path, "--json")
    finished_once(done, tmp_path)
    events = events_of(done)
    retries = [e["data"] for e in events if e["kind"] == "retry"]
    assert len(retries) == 1 and retries[0]["discard_deltas"] is True
    deltas = [e["data"]["delta"] for e in events if e["kind"] == "assistant_text_delta"]
    assert "".join(deltas).startswith("I wil") and "".join(deltas).count("I will append now.") == 1
    assert [r[1] for r in server.requests] == ["cut after 3", "ok", "ok"]


@pytest.mark.parametrize("api", sorted(APIS))
@pytest.mark.parametrize("fault", [BYTE_BY_BYTE, GARBAGE], ids=["byte_by_byte", "garbage_lines"])
def test_a_slow_or_noisy_stream_is_assembled_whole(api: str, fault: Any, tmp_path: Path) -> None:
    """One byte per TCP segment, or comments, unknown fields and stray lines between the
    events (ignored, as WHATWG SSE says): the same reply, nothing retried or timed out."""
    with FaultServer() as server:
        server.faults.append(fault)
        server.replies.extend([TOOL, text_reply("Appended.")])
        done = run(server, api, tmp_path, "--json")
    finished_once(done, tmp_path)
    events = events_of(done)
    assert not [e for e in events if e["kind"] in ("retry", "warning", "error")]
    assert next(e["data"]["text"] for e in events if e["kind"] == "assistant_text_end") == "I will append now."
    assert [e["data"]["tool_name"] for e in events if e["kind"] == "tool_call_start"] == ["shell"]


@pytest.mark.parametrize("api", sorted(APIS))
@pytest.mark.parametrize("fault", [not_json(3), NO_DATA_PREFIX], ids=["not_json", "no_data_prefix"])
def test_a_malformed_event_is_a_broken_stream_asked_again(api: str, fault: Any, tmp_path: Path) -> None:
    with FaultServer() as server:
        server.faults.append(fault)
        server.replies.extend([TOOL, TOOL, text_reply("Appended.")])
        done = run(server, api, tmp_path, "--json")
    finished_once(done, tmp_path)
    retries = [e["data"] for e in events_of(done) if e["kind"] == "retry"]
    assert [r["error_type"] for r in retries] == ["StreamError"]
    expected = "not JSON" if fault.rewrite is not NO_DATA_PREFIX.rewrite else "ended before its final event"
    assert expected in retries[0]["message"]


def test_malformed_events_on_every_try_end_in_a_clear_error(tmp_path: Path) -> None:
    with FaultServer() as server:
        server.faults.extend([not_json(2), not_json(2)])
        server.replies.extend([TOOL, TOOL])
        done = run(server, "anthropic", tmp_path, "--max-retries", "1")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "the reply stream broke on each of 2 tries: anthropic sent a stream event that is not JSON" in done.stderr
    assert not (tmp_path / "log.txt").exists()


def peak_rss_mb(server: FaultServer, cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``codeloop run`` and return the kernel's high-water RSS of that process (MiB).

    ``/proc/PID/status`` VmHWM vanishes when the process exits, so sampling it could miss
    the peak; ``wait4``'s ``ru_maxrss`` is the same counter, read once the process is over."""
    args, env = args_for(server, "anthropic", cwd, "--max-retries", "0")
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                          stdin=subprocess.DEVNULL) as proc:
        stdout, stderr = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)


def test_a_50_mb_answer_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    size = 50 << 20
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with FaultServer() as server:
        server.replies.append(text_reply("Hello."))
        baseline, normal = peak_rss_mb(server, tmp_path / "a")
        server.faults.append(huge(size))
        peak, done = peak_rss_mb(server, tmp_path / "b")
    assert normal.returncode == 0, normal.stderr
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "anthropic sent a stream line larger than 8 MiB; codeloop stopped reading it" in done.stderr
    # Before the cap, reading it whole took 150 MiB more than a normal run (and 47 s); now ~15 MiB.
    assert peak - baseline < (size >> 20) / 2, (baseline, peak)


# ---------------------------------------------------------------- the non-streaming path


def complete_through_the_loop(server: FaultServer) -> tuple[Any, list[Any]]:
    """The loop's model call (retries included) with ``stream=False`` over the real adapter."""
    seen: list[Any] = []
    config = SessionConfig(max_retries=2, retry_base_delay=0.01)

    async def go() -> Any:
        client = Client({"openai_compatible": OpenAICompatibleAdapter(server.base_url + "/v1", "k")},
                         default_provider="openai_compatible")
        try:
            request = Request(model="scripted", messages=[Message.user("hi")])
            return await call_model(client, request, stream=False, config=config,
                                    emit=lambda kind, **data: seen.append((kind, data)))
        finally:
            await client.close()

    try:
        return asyncio.run(go()), seen
    except SDKError as exc:
        return exc, seen


BODY = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "Hello."}, "finish_reason": "stop"}]}).encode()


@pytest.mark.parametrize(("fault", "error", "words"), [
    (raw(BODY[:40]), ProviderError, "with a body that is not JSON"),  # cut mid-object, length honest
    (raw(BODY[:40], content_length=len(BODY)), NetworkError, "peer closed connection"),  # promises more
    (raw(BODY, content_length=40), ProviderError, "with a body that is not JSON"),  # promises less
], ids=["cut", "length_too_long", "length_too_short"])
def test_a_truncated_json_answer_is_a_clear_error_retried(fault: Any, error: type[SDKError], words: str) -> None:
    with FaultServer() as server:
        server.faults.extend([fault, fault, fault])
        failed, seen = complete_through_the_loop(server)
        assert isinstance(failed, error) and words in str(failed) and "3 tries" in str(failed)
        assert [kind for kind, _ in seen] == [ev.Retry, ev.Retry]
        server.faults.append(fault)
        server.replies.append(text_reply("Hello."))
        answer, _ = complete_through_the_loop(server)
    assert answer.text == "Hello."


def test_a_50_mb_json_answer_is_refused_before_it_is_read() -> None:
    with FaultServer() as server:
        server.faults.append(raw(b"{" + b" " * (50 << 20) + b"}"))
        failed, seen = complete_through_the_loop(server)
    assert isinstance(failed, ProviderError) and not failed.retryable and not seen
    assert f"an answer of {(50 << 20) + 2} bytes larger than 32 MiB" in str(failed)
