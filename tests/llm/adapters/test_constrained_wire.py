"""Constrained decoding on the wire (issue 10): request bodies, the support probe and a
session in constrained mode, against a real loopback server speaking Chat Completions."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.agent.session import Session
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm import constrained
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.client import Client
from codeloop.llm.types import Message, Request, ToolDefinition
from codeloop.profiles import create_profile

from .wire_chat_completions import completion, error_reply
from .wire_loopback import LoopbackServer, json_reply

SHELL = ToolDefinition("shell", "Run a command", {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"],
})


async def test_reply_schema_travels_as_llama_cpp_json_schema_response_format(wire: LoopbackServer) -> None:
    adapter = OpenAICompatibleAdapter(f"{wire.base_url}/v1", name="llama_cpp")
    wire.push(json_reply(completion('{"final_answer": "hi"}')))
    request = Request(model="qwen", messages=[Message.user("hi")], response_format=constrained.response_format([SHELL]))
    response = await adapter.complete(request)
    await adapter.close()
    body = wire.last.json()
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": constrained.reply_schema([SHELL]), "strict": True},
    }
    assert "tools" not in body
    assert constrained.parse_constrained_reply(response.text, {"shell": SHELL.parameters}).answer == "hi"


async def test_probe_supported_when_reply_matches_and_cached_per_server(wire: LoopbackServer) -> None:
    constrained.clear_support_cache()
    adapter = OpenAICompatibleAdapter(f"{wire.base_url}/v1", name="llama_cpp")
    client = Client({"llama_cpp": adapter})
    key = constrained.support_key(client, Request(model="m", messages=[]))
    assert key == f"llama_cpp|{wire.base_url}/v1"
    wire.push(json_reply(completion('{"ok": true}')))
    first = await constrained.probe_support(client.complete, "m", key=key)
    second = await constrained.probe_support(client.complete, "m", key=key)
    await client.close()
    assert first.supported and second == first
    assert len(wire.requests) == 1, "the second probe of the same server must come from the cache"
    sent = wire.last.json()
    assert sent["response_format"]["json_schema"]["schema"] == constrained.PROBE_SCHEMA
    assert sent["max_tokens"] == 16


async def test_probe_unsupported_when_server_rejects_the_field(wire: LoopbackServer) -> None:
    adapter = OpenAICompatibleAdapter(f"{wire.base_url}/v1", name="vllm")
    wire.push(error_reply(400, "Unrecognized request argument supplied: response_format"))
    support = await constrained.probe_support(adapter.complete, "m")
    await adapter.close()
    assert not support.supported
    assert support.reason.startswith("the server rejected a JSON Schema response_format (InvalidRequestError")


async def test_probe_unsupported_when_server_ignores_the_schema(wire: LoopbackServer) -> None:
    adapter = OpenAICompatibleAdapter(f"{wire.base_url}/v1", name="ollama")
    wire.push(json_reply(completion("Sure, here is the JSON you asked for.")))
    support = await constrained.probe_support(adapter.complete, "m")
    await adapter.close()
    assert not support.supported and "does not match it" in support.reason


def _session(wire: LoopbackServer, root: Path, mode: str) -> tuple[Session, list[ev.SessionEvent], Client]:
    adapter = OpenAICompatibleAdapter(f"{wire.base_url}/v1", name="openai_compatible")
    client = Client({"openai_compatible": adapter})
    profile = create_profile("openai", "qwen")
    session = Session(profile, LocalExecutionEnvironment(str(root)),
                      SessionConfig(stream=False, constrained_decoding=mode), client)
    events: list[ev.SessionEvent] = []
    session.subscribe(events.append)
    return session, events, client


async def test_session_auto_probes_then_sends_schema_and_runs_the_json_call(wire: LoopbackServer, tmp_path: Path) -> None:
    constrained.clear_support_cache()
    session, events, client = _session(wire, tmp_path, "auto")
    wire.push(
        json_reply(completion('{"ok": true}')),
        json_reply(completion('{"tool": "shell", "arguments": {"command": "echo constrained-ran"}}')),
        json_reply(completion('{"final_answer": "It printed constrained-ran."}')),
    )
    answer = await session.submit("run echo")
    await session.close()
    await client.close()
    assert answer == "It printed constrained-ran."
    modes = [e for e in events if isinstance(e, ev.WarningEvent) and e.code == "constrained_decoding"]
    assert [m.message for m in modes] == [
        "Constrained decoding: on (auto: the server constrains replies to a JSON Schema)."]
    ends = [e for e in events if isinstance(e, ev.ToolCallEnd)]
    assert len(ends) == 1 and "constrained-ran" in (ends[0].output or "")
    bodies = [r.json() for r in wire.requests]
    assert len(bodies) == 3
    for body in bodies[1:]:
        assert "tools" not in body and body["response_format"]["type"] == "json_schema"
        schema = body["response_format"]["json_schema"]["schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.validate({"tool": "shell", "arguments": {"command": "ls"}}, schema)
        assert "# Reply format" in body["messages"][0]["content"]
    # the call went back as a structured call (no duplicate JSON text), then its result
    assistant = bodies[2]["messages"][-2]
    assert assistant["content"] in (None, "")
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["shell"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"command": "echo constrained-ran"}
    assert bodies[2]["messages"][-1]["role"] == "tool"
    assert "constrained-ran" in bodies[2]["messages"][-1]["content"]


async def test_session_auto_falls_back_to_native_tools_when_server_rejects(wire: LoopbackServer, tmp_path: Path) -> None:
    constrained.clear_support_cache()
    session, events, client = _session(wire, tmp_path, "auto")
    wire.push(error_reply(400, "response_format is not supported"), json_reply(completion("plain answer")))
    answer = await session.submit("hi")
    await session.close()
    await client.close()
    assert answer == "plain answer"
    mode = [e.message for e in events if isinstance(e, ev.WarningEvent) and e.code == "constrained_decoding"]
    assert len(mode) == 1 and mode[0].startswith("Constrained decoding: off (auto: the server rejected")
    body = wire.requests[1].json()
    assert "response_format" not in body and [t["function"]["name"] for t in body["tools"]]


async def test_session_constrained_malformed_reply_gets_error_result_with_valid_form(
    wire: LoopbackServer, tmp_path: Path,
) -> None:
    session, events, client = _session(wire, tmp_path, "on")
    wire.push(json_reply(completion("I will list the files.")), json_reply(completion('{"final_answer": "ok"}')))
    await session.submit("list files")
    await session.close()
    await client.close()
    end = next(e for e in events if isinstance(e, ev.ToolCallEnd))
    assert (end.error or "").startswith("Invalid reply: not JSON")
    assert '{"final_answer": "<your answer to the user>"}' in (end.error or "")
    sent = json.loads(wire.requests[1].body)["messages"][-1]
    assert sent["role"] == "tool" and "Invalid reply: not JSON" in sent["content"]
    assert len(wire.requests) == 2, "mode 'on' sends no probe"


async def test_probe_transient_failure_is_not_cached(wire: LoopbackServer) -> None:
    constrained.clear_support_cache()
    adapter = OpenAICompatibleAdapter(f"{wire.base_url}/v1", name="llama_cpp")
    wire.push(error_reply(503, "loading model"), json_reply(completion('{"ok": false}')))
    first = await constrained.probe_support(adapter.complete, "m", key="k")
    second = await constrained.probe_support(adapter.complete, "m", key="k")
    await adapter.close()
    assert not first.supported and first.reason.startswith("the probe request failed (ServerError")
    assert second.supported and len(wire.requests) == 2
