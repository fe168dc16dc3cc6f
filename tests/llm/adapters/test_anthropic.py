"""AnthropicAdapter against a loopback server speaking the Messages API (spec §7.3, §7.7, §2.10)."""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.llm import errors as E
from codeloop.llm.adapters.anthropic import AnthropicAdapter, _StreamState, parse_message, translate_messages
from codeloop.llm.adapters.base import AdapterTimeout
from codeloop.llm.adapters.flow import MALFORMED
from codeloop.llm.sse import SSEParser
from codeloop.llm.types import (
    AudioData,
    ContentKind,
    ContentPart,
    ImageData,
    Message,
    Request,
    ResponseFormat,
    Role,
    StreamEvent,
    StreamEventType,
    ToolCallData,
    ToolChoice,
    ToolDefinition,
)

from . import wire_anthropic as W
from .json_strategies import json_events, mutated
from .wire_loopback import LoopbackServer, raw_reply, sse_frame, sse_reply, status_cases

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CLOCK = ToolDefinition(name="get_time", description="Current time", parameters={"type": "object", "properties": {}})


@pytest.fixture
async def adapter(wire: LoopbackServer) -> AsyncIterator[AnthropicAdapter]:
    a = AnthropicAdapter(api_key="sk-ant-test", base_url=wire.base_url, timeout=10)
    yield a
    await a.close()


def req(*messages: Message, **kw: object) -> Request:
    return Request(model="claude-sonnet-4-5", messages=list(messages), **kw)  # type: ignore[arg-type]


async def collect(adapter: AnthropicAdapter, request: Request) -> list[StreamEvent]:
    return [e async for e in adapter.stream(request)]


# ---------------------------------------------------------------- complete(): request shape


async def test_7_3_complete_sends_native_messages_request(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    wire.push(W.message_reply(W.message([W.text("Hi there.")], usage_=W.usage(25, 4, cache_write=10, cache_read=7))))
    resp = await adapter.complete(
        req(
            Message.system("You are terse."),
            Message.developer("Answer in English."),
            Message.user("Hello"),
            temperature=0.0,
            top_p=0.5,
            stop_sequences=["END"],
            metadata={"user_id": "u-1", "other": "x"},
        )
    )
    sent = wire.last
    assert sent.method == "POST" and sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    body = sent.json()
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == 4096
    assert [b["text"] for b in body["system"]] == ["You are terse.", "Answer in English."]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hello", "cache_control": {"type": "ephemeral"}}]}
    ]
    assert body["temperature"] == 0.0 and body["top_p"] == 0.5 and body["stop_sequences"] == ["END"]
    assert body["metadata"] == {"user_id": "u-1"}
    assert "stream" not in body and "tools" not in body

    assert resp.text == "Hi there."
    assert resp.provider == "anthropic" and resp.id == "msg_013Zva2CMHLNnXjNJJKqJ2EF"
    assert resp.model == "claude-sonnet-4-5-20250929"
    assert (resp.finish_reason.reason, resp.finish_reason.raw) == ("stop", "end_turn")
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.total_tokens) == (25, 4, 29)
    assert (u.cache_write_tokens, u.cache_read_tokens, u.reasoning_tokens) == (10, 7, None)
    assert resp.rate_limit is not None
    assert (resp.rate_limit.requests_limit, resp.rate_limit.requests_remaining) == (50, 49)
    assert (resp.rate_limit.tokens_limit, resp.rate_limit.tokens_remaining) == (80000, 79000)
    assert resp.rate_limit.reset_at is not None
    assert resp.raw is not None and resp.raw["type"] == "message"


@pytest.mark.parametrize(
    ("stop_reason", "unified"),
    [("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"), ("tool_use", "tool_calls"),
     ("refusal", "content_filter"), ("pause_turn", "other")],
)
async def test_3_8_finish_reason_mapping(
    adapter: AnthropicAdapter, wire: LoopbackServer, stop_reason: str, unified: str
) -> None:
    wire.push(W.message_reply(W.message([W.text("x")], stop_reason=stop_reason)))
    resp = await adapter.complete(req(Message.user("q")))
    assert (resp.finish_reason.reason, resp.finish_reason.raw) == (unified, stop_reason)


async def test_7_3_strict_alternation_merges_consecutive_same_role_turns(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.message_reply(W.message([W.text("ok")])))
    call_a = ToolCallData(id="toolu_a", name="get_weather", arguments={"city": "Paris"})
    call_b = ToolCallData(id="toolu_b", name="get_time", arguments={})
    await adapter.complete(
        req(
            Message.user("first"),
            Message.user("second"),
            Message(Role.ASSISTANT, [ContentPart.of_text("calling"), ContentPart.of_tool_call(call_a)]),
            Message(Role.ASSISTANT, [ContentPart.of_tool_call(call_b)]),
            Message.tool_result("toolu_a", "18C", name="get_weather"),
            Message.tool_result("toolu_b", {"time": "12:00"}, is_error=True),
            Message.user("and now?"),
            tools=[WEATHER, CLOCK],
        )
    )
    turns = wire.last.json()["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert [b["text"] for b in turns[0]["content"]] == ["first", "second"]
    assert turns[1]["content"] == [
        {"type": "text", "text": "calling"},
        {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_b", "name": "get_time", "input": {}},
    ]
    assert turns[2]["content"][0] == {"type": "tool_result", "tool_use_id": "toolu_a", "content": "18C"}
    assert turns[2]["content"][1] == {
        "type": "tool_result", "tool_use_id": "toolu_b", "content": '{"time": "12:00"}', "is_error": True,
    }
    assert turns[2]["content"][2]["text"] == "and now?"


@given(st.lists(st.tuples(st.sampled_from(list(Role)), st.text(min_size=0, max_size=5)), max_size=12))
@settings(max_examples=200, deadline=None)
def test_7_3_any_role_sequence_translates_to_alternating_turns_losing_no_text(
    messages: list[tuple[Role, str]],
) -> None:
    history = [Message(role, [ContentPart.of_text(text)]) for role, text in messages]
    system, turns = translate_messages(history)
    roles = [t["role"] for t in turns]
    assert all(a != b for a, b in itertools.pairwise(roles))
    sent = [b["text"] for t in turns for b in t["content"]]
    expected = [t for r, t in messages if r not in (Role.SYSTEM, Role.DEVELOPER) and t]
    assert sent == expected
    assert [b["text"] for b in system] == [t for r, t in messages if r in (Role.SYSTEM, Role.DEVELOPER) and t]


@pytest.mark.parametrize(
    ("choice", "expected_choice", "tools_sent"),
    [
        (None, None, True),
        (ToolChoice.auto(), {"type": "auto"}, True),
        (ToolChoice.required(), {"type": "any"}, True),
        (ToolChoice.named("get_weather"), {"type": "tool", "name": "get_weather"}, True),
        (ToolChoice.none(), None, False),
    ],
)
async def test_5_3_tool_definitions_and_choice_translation(
    adapter: AnthropicAdapter, wire: LoopbackServer, choice: ToolChoice | None, expected_choice: object, tools_sent: bool
) -> None:
    wire.push(W.message_reply(W.message([W.text("ok")])))
    await adapter.complete(req(Message.user("weather?"), tools=[WEATHER, CLOCK], tool_choice=choice))
    body = wire.last.json()
    assert body.get("tool_choice") == expected_choice
    if tools_sent:
        assert body["tools"][0] == {
            "name": "get_weather", "description": "Current weather for a city", "input_schema": WEATHER.parameters,
        }
        assert body["tools"][1]["name"] == "get_time"
    else:
        assert "tools" not in body
    assert adapter.supports_tool_choice(choice.mode if choice else "auto")


async def test_5_4_tool_call_response_round_trips_into_the_next_request(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    wire.push(
        W.message_reply(
            W.message(
                [W.text("Let me check."), W.tool_use("toolu_01A09q90qw90lq917835lq9", "get_weather", {"city": "Oslo"})],
                stop_reason="tool_use",
            )
        ),
        W.message_reply(W.message([W.text("It is 3C in Oslo.")])),
    )
    first = await adapter.complete(req(Message.user("Weather in Oslo?"), tools=[WEATHER]))
    assert first.finish_reason.reason == "tool_calls"
    [call] = first.tool_calls
    assert (call.id, call.name, call.arguments, call.parse_error) == (
        "toolu_01A09q90qw90lq917835lq9", "get_weather", {"city": "Oslo"}, None,
    )
    second = await adapter.complete(
        req(Message.user("Weather in Oslo?"), first.message, Message.tool_result(call.id, "3C"), tools=[WEATHER])
    )
    assert second.text == "It is 3C in Oslo."
    turns = wire.last.json()["messages"]
    assert turns[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"city": "Oslo"}},
        ],
    }
    assert turns[2]["content"][0]["tool_use_id"] == "toolu_01A09q90qw90lq917835lq9"
    assert turns[2]["content"][0]["content"] == "3C"


async def test_8_3_thinking_and_redacted_thinking_round_trip_byte_for_byte(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" + "+/=" * 3
    redacted = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
    wire.push(
        W.message_reply(
            W.message([W.thinking("Let me add: 2+2=4.", signature), W.redacted_thinking(redacted), W.text("4")])
        ),
        W.message_reply(W.message([W.text("done")])),
    )
    first = await adapter.complete(req(Message.user("2+2?"), provider_options={"anthropic": {"thinking": {
        "type": "enabled", "budget_tokens": 2048}}}))
    kinds = [p.kind for p in first.message.content]
    assert kinds == [ContentKind.THINKING, ContentKind.REDACTED_THINKING, ContentKind.TEXT]
    assert first.reasoning == "Let me add: 2+2=4."
    assert first.message.content[0].thinking is not None
    assert first.message.content[0].thinking.signature == signature
    assert first.usage.reasoning_tokens == 5  # ceil(18 characters / 4): estimated, §3.9
    assert wire.last.json()["thinking"] == {"type": "enabled", "budget_tokens": 2048}

    await adapter.complete(req(Message.user("2+2?"), first.message, Message.user("thanks")))
    assistant = wire.last.json()["messages"][1]["content"]
    assert assistant == [
        {"type": "thinking", "thinking": "Let me add: 2+2=4.", "signature": signature},
        {"type": "redacted_thinking", "data": redacted},
        {"type": "text", "text": "4"},
    ]


async def test_3_5_unsigned_thinking_from_another_provider_is_not_sent(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.message_reply(W.message([W.text("ok")])))
    foreign = Message(Role.ASSISTANT, [ContentPart.of_thinking("gemini thoughts"), ContentPart.of_text("hi")])
    await adapter.complete(req(Message.user("a"), foreign, Message.user("b")))
    assert wire.last.json()["messages"][1]["content"] == [{"type": "text", "text": "hi"}]


async def test_2_10_auto_cache_marks_system_tools_and_last_user_turn(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.message_reply(W.message([W.text("ok")])))
    await adapter.complete(
        req(
            Message.system("sys one"),
            Message.system("sys two"),
            Message.user("old question"),
            Message.assistant("old answer"),
            Message.user("new question"),
            tools=[WEATHER, CLOCK],
        )
    )
    sent = wire.last
    body = sent.json()
    eph = {"type": "ephemeral"}
    assert "cache_control" not in body["system"][0] and body["system"][1]["cache_control"] == eph
    assert "cache_control" not in body["tools"][0] and body["tools"][1]["cache_control"] == eph
    assert "cache_control" not in body["messages"][0]["content"][0]
    assert "cache_control" not in body["messages"][1]["content"][0]
    assert body["messages"][2]["content"][-1]["cache_control"] == eph
    assert json.dumps(body).count("cache_control") == 3
    assert sent.headers["anthropic-beta"] == "prompt-caching-2024-07-31"


async def test_2_10_auto_cache_false_sends_no_breakpoints(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    wire.push(W.message_reply(W.message([W.text("ok")])))
    await adapter.complete(
        req(Message.system("sys"), Message.user("q"), tools=[WEATHER],
            provider_options={"anthropic": {"auto_cache": False}})
    )
    sent = wire.last
    assert "cache_control" not in sent.body.decode()
    assert "anthropic-beta" not in sent.headers
    assert "auto_cache" not in sent.json()


async def test_2_8_beta_headers_joined_and_other_options_merged_into_body(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.message_reply(W.message([W.text("ok")])))
    await adapter.complete(
        req(
            Message.user("q"),
            provider_options={
                "anthropic": {
                    "beta_headers": ["interleaved-thinking-2025-05-14", "token-efficient-tools-2025-02-19"],
                    "top_k": 5,
                    "service_tier": "standard_only",
                },
                "openai": {"store": True},
            },
        )
    )
    sent = wire.last
    assert sent.headers["anthropic-beta"] == (
        "interleaved-thinking-2025-05-14,token-efficient-tools-2025-02-19,prompt-caching-2024-07-31"
    )
    body = sent.json()
    assert body["top_k"] == 5 and body["service_tier"] == "standard_only"
    assert "beta_headers" not in body and "store" not in body


@pytest.mark.parametrize(("effort", "budget", "max_tokens"), [("low", 1024, 4096), ("high", 16384, 20480)])
async def test_3_9_reasoning_effort_enables_thinking_with_a_budget(
    adapter: AnthropicAdapter, wire: LoopbackServer, effort: str, budget: int, max_tokens: int
) -> None:
    wire.push(W.message_reply(W.message([W.text("ok")])))
    await adapter.complete(req(Message.user("q"), reasoning_effort=effort))
    body = wire.last.json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == max_tokens


async def test_3_5_images_as_base64_url_and_local_file(
    adapter: AnthropicAdapter, wire: LoopbackServer, tmp_path: Path
) -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    local = tmp_path / "shot.jpg"
    local.write_bytes(b"\xff\xd8\xffjpeg")
    wire.push(W.message_reply(W.message([W.text("a cat")])))
    await adapter.complete(
        req(
            Message(
                Role.USER,
                [
                    ContentPart.of_text("What is this?"),
                    ContentPart.of_image(ImageData(data=png)),
                    ContentPart.of_image(ImageData(url="https://example.com/cat.webp")),
                    ContentPart.of_image(ImageData(url=str(local))),
                ],
            )
        )
    )
    blocks = wire.last.json()["messages"][0]["content"]
    assert blocks[1] == {
        "type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()}
    }
    assert blocks[2] == {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.webp"}}
    assert blocks[3]["source"]["media_type"] == "image/jpeg"
    assert base64.b64decode(blocks[3]["source"]["data"]) == b"\xff\xd8\xffjpeg"


async def test_8_3_audio_input_is_rejected_before_sending(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    message = Message(Role.USER, [ContentPart(kind=ContentKind.AUDIO, audio=AudioData(data=b"RIFF"))])
    with pytest.raises(E.InvalidRequestError, match="does not accept audio"):
        await adapter.complete(req(message))
    assert wire.requests == []


async def test_3_5_missing_local_image_file_names_the_path(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    with pytest.raises(E.ConfigurationError, match=r"/nonexistent/shot\.png"):
        await adapter.complete(req(Message(Role.USER, [ContentPart.of_image(ImageData(url="/nonexistent/shot.png"))])))


def test_6_missing_api_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(E.ConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicAdapter()


async def test_2_2_key_and_base_url_from_environment(wire: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.base_url + "/v1")
    wire.push(W.message_reply(W.message([W.text("ok")])))
    adapter = AnthropicAdapter(default_headers={"x-gateway": "on"})
    try:
        await adapter.complete(req(Message.user("q")))
    finally:
        await adapter.close()
    assert wire.last.path == "/v1/messages"
    assert wire.last.headers["x-api-key"] == "sk-env" and wire.last.headers["x-gateway"] == "on"


async def test_7_5_unknown_content_block_is_warned_not_fatal(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    wire.push(
        W.message_reply(
            W.message([{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}, W.text("ok")])
        )
    )
    resp = await adapter.complete(req(Message.user("q")))
    assert resp.text == "ok"
    assert [w.code for w in resp.warnings] == ["unknown_content"]
    assert "server_tool_use" in resp.warnings[0].message


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(("status", "cls", "retryable"), status_cases(529))
@pytest.mark.parametrize("streaming", [False, True])
async def test_6_4_http_status_maps_to_error_class(
    adapter: AnthropicAdapter, wire: LoopbackServer, status: int, cls: type[E.SDKError], retryable: bool, streaming: bool
) -> None:
    headers = {"retry-after": "7"} if status == 429 else None
    wire.push(W.error_reply(status, f"scripted failure {status}", headers=headers))
    with pytest.raises(E.SDKError) as info:
        if streaming:
            await collect(adapter, req(Message.user("q")))
        else:
            await adapter.complete(req(Message.user("q")))
    err = info.value
    assert type(err) is cls
    assert err.retryable is retryable
    assert f"scripted failure {status}" in err.message
    if isinstance(err, E.ProviderError):
        assert err.status_code == status and err.provider == "anthropic"
        assert err.error_code == W.ERROR_TYPES[status]
        assert err.raw is not None and err.raw["error"]["message"] == f"scripted failure {status}"
        assert err.retry_after == (7.0 if status == 429 else None)


async def test_6_5_context_length_message_on_400(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    wire.push(W.error_reply(400, "prompt is too long: 210000 tokens > 200000 maximum context length"))
    with pytest.raises(E.ContextLengthError):
        await adapter.complete(req(Message.user("q")))


async def test_bad_input_malformed_json_body_is_a_provider_error(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    wire.push(raw_reply(b'{"id": "msg_1", "content": [', content_type="application/json"))
    with pytest.raises(E.ProviderError, match="not JSON"):
        await adapter.complete(req(Message.user("q")))


async def test_bad_input_json_without_content_list_is_a_provider_error(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    wire.push(raw_reply(b'{"id": "msg_1", "content": "oops"}'))
    with pytest.raises(E.ProviderError, match="unexpected shape"):
        await adapter.complete(req(Message.user("q")))


async def test_6_network_error_when_nothing_listens() -> None:
    adapter = AnthropicAdapter(api_key="k", base_url="http://127.0.0.1:9", timeout=5)
    try:
        with pytest.raises(E.NetworkError):
            await adapter.complete(req(Message.user("q")))
    finally:
        await adapter.close()


# ---------------------------------------------------------------- stream()


async def test_7_7_stream_text_follows_start_delta_end_and_finish_matches_complete(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    body = W.message([W.text("Hello, streaming world!")], usage_=W.usage(30, 6, cache_read=20))
    wire.push(W.stream_reply(body), W.message_reply(body))
    events = await collect(adapter, req(Message.user("hi")))
    assert wire.requests[0].json()["stream"] is True
    types = [e.type for e in events]
    assert types[0] == StreamEventType.STREAM_START
    assert types[1] == StreamEventType.TEXT_START and types[-2] == StreamEventType.TEXT_END
    assert types[-1] == StreamEventType.FINISH
    assert "".join(e.delta or "" for e in events if e.type == StreamEventType.TEXT_DELTA) == "Hello, streaming world!"
    assert {e.text_id for e in events if e.type.startswith("text_")} == {"0"}
    finish = events[-1]
    assert finish.response is not None and finish.usage is not None and finish.finish_reason is not None
    complete = await adapter.complete(req(Message.user("hi")))
    assert finish.response.message == complete.message
    assert finish.usage.input_tokens == 30 and finish.usage.output_tokens == 6 and finish.usage.cache_read_tokens == 20
    assert finish.response.usage.total_tokens == complete.usage.total_tokens
    assert finish.finish_reason == complete.finish_reason
    assert finish.response.id == complete.id and finish.response.rate_limit == complete.rate_limit


async def test_7_7_stream_tool_call_start_delta_end(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    body = W.message(
        [W.text("Checking."), W.tool_use("toolu_9", "get_weather", {"city": "San Francisco", "unit": "celsius"})],
        stop_reason="tool_use",
    )
    wire.push(W.stream_reply(body))
    events = await collect(adapter, req(Message.user("weather"), tools=[WEATHER]))
    tool_events = [e for e in events if e.type.startswith("tool_call")]
    assert tool_events[0].type == StreamEventType.TOOL_CALL_START
    assert tool_events[0].tool_call is not None and tool_events[0].tool_call.id == "toolu_9"
    deltas = [e.delta for e in tool_events if e.type == StreamEventType.TOOL_CALL_DELTA]
    assert "".join(d or "" for d in deltas) == json.dumps({"city": "San Francisco", "unit": "celsius"})
    end = tool_events[-1]
    assert end.type == StreamEventType.TOOL_CALL_END and end.tool_call is not None
    assert end.tool_call.arguments == {"city": "San Francisco", "unit": "celsius"}
    final = events[-1].response
    assert final is not None and final.finish_reason.reason == "tool_calls"
    assert final.tool_calls[0].arguments == {"city": "San Francisco", "unit": "celsius"}


async def test_7_7_stream_thinking_keeps_signature_from_signature_delta(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    body = W.message([W.thinking("step one, step two", "sig-XYZ=="), W.redacted_thinking("opaque=="), W.text("42")])
    wire.push(W.stream_reply(body))
    events = await collect(adapter, req(Message.user("q")))
    types = [e.type for e in events]
    assert types.index(StreamEventType.REASONING_START) < types.index(StreamEventType.REASONING_END)
    assert "".join(e.reasoning_delta or "" for e in events) == "step one, step two"
    final = events[-1].response
    assert final is not None
    assert final.message.content[0].thinking is not None
    assert final.message.content[0].thinking.signature == "sig-XYZ=="
    assert final.message.content[1].kind == ContentKind.REDACTED_THINKING
    assert final.message.content[1].thinking is not None and final.message.content[1].thinking.text == "opaque=="


async def test_bad_input_stream_tool_arguments_not_json_are_surfaced_faithfully(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    frames = W.stream_frames(W.message([W.tool_use("toolu_x", "get_weather", {})], stop_reason="tool_use"))
    broken = sse_frame(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"city": "Par'}},
        "content_block_delta",
    )
    stop_index = next(i for i, f in enumerate(frames) if b"content_block_stop" in f)
    start_index = next(i for i, f in enumerate(frames) if b"content_block_start" in f)
    frames = [*frames[:start_index + 1], broken, *frames[stop_index:]]
    wire.push(sse_reply(frames))
    events = await collect(adapter, req(Message.user("q"), tools=[WEATHER]))
    end = next(e for e in events if e.type == StreamEventType.TOOL_CALL_END)
    assert end.tool_call is not None
    assert end.tool_call.raw_arguments == '{"city": "Par'
    assert end.tool_call.parse_error is not None and "not valid JSON" in end.tool_call.parse_error
    final = events[-1].response
    assert final is not None and final.tool_calls[0].raw_arguments == '{"city": "Par'


async def test_bad_input_stream_ending_without_message_stop_is_a_stream_error(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.stream_reply(W.message([W.text("partial answer")]), final=False))
    seen: list[StreamEvent] = []
    with pytest.raises(E.StreamError, match="message_stop"):
        async for event in adapter.stream(req(Message.user("q"))):
            seen.append(event)
    assert any(e.type == StreamEventType.TEXT_DELTA for e in seen)


async def test_7_7_stream_cut_mid_way_is_a_stream_error(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    wire.push(W.stream_reply(W.message([W.text("a long answer that gets cut")]), cut_after=4))
    seen: list[StreamEvent] = []
    with pytest.raises(E.StreamError):
        async for event in adapter.stream(req(Message.user("q"))):
            seen.append(event)
    assert seen and seen[0].type == StreamEventType.STREAM_START


async def test_7_7_error_event_inside_stream_maps_to_server_error(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    frames = [*W.stream_frames(W.message([W.text("hello")]))[:3], W.stream_error_frame(529, "Overloaded")]
    wire.push(sse_reply(frames))
    with pytest.raises(E.ServerError, match="Overloaded") as info:
        await collect(adapter, req(Message.user("q")))
    assert info.value.error_code == "overloaded_error" and info.value.retryable


async def test_bad_input_unknown_stream_events_are_passed_through_not_fatal(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    frames = W.stream_frames(W.message([W.text("ok")]))
    frames.insert(2, sse_frame({"type": "future_event", "detail": 1}, "future_event"))
    frames.insert(
        4, sse_frame({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta"}}, "content_block_delta")
    )
    wire.push(sse_reply(frames))
    events = await collect(adapter, req(Message.user("q")))
    provider_events = [e for e in events if e.type == StreamEventType.PROVIDER_EVENT]
    assert [e.raw and e.raw["type"] for e in provider_events] == ["future_event", "content_block_delta"]
    assert events[-1].response is not None and events[-1].response.text == "ok"


async def test_bad_input_stream_event_that_is_not_json_is_a_stream_error(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    frames = [*W.stream_frames(W.message([W.text("ok")]))[:2], sse_frame("{not json", "content_block_start")]
    wire.push(sse_reply(frames))
    with pytest.raises(E.StreamError, match="not JSON"):
        await collect(adapter, req(Message.user("q")))


async def test_bad_input_stream_event_with_wrong_field_types_is_a_stream_error(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    frames = [*W.stream_frames(W.message([W.text("ok")]))[:2], sse_frame({"type": "content_block_start", "index": "zero", "content_block": {"type": "text"}})]
    wire.push(sse_reply(frames))
    with pytest.raises(E.StreamError, match="malformed"):
        await collect(adapter, req(Message.user("q")))


# ---------------------------------------------------------------- timeouts (§4.7)


async def test_4_7_stream_silence_longer_than_read_timeout_is_a_timeout(wire: LoopbackServer) -> None:
    limits = AdapterTimeout(connect=5.0, request=30.0, stream_read=0.3)
    adapter = AnthropicAdapter(api_key="k", base_url=wire.base_url, timeout=limits)
    frames = W.stream_frames(W.message([W.text("slow stream")]))
    wire.push(dataclasses.replace(sse_reply(frames), pause=(3, 1.5)))
    seen: list[StreamEvent] = []
    try:
        with pytest.raises(E.RequestTimeoutError, match=r"0\.3 s|timed out"):
            async for event in adapter.stream(req(Message.user("q"))):
                seen.append(event)
    finally:
        await adapter.close()
    assert seen and seen[0].type == StreamEventType.STREAM_START


async def test_4_7_complete_slower_than_request_timeout_is_a_timeout(wire: LoopbackServer) -> None:
    adapter = AnthropicAdapter(api_key="k", base_url=wire.base_url, timeout=0.3)
    wire.push(dataclasses.replace(W.message_reply(W.message([W.text("late")])), pause=(0, 1.5)))
    try:
        with pytest.raises(E.RequestTimeoutError):
            await adapter.complete(req(Message.user("q")))
    finally:
        await adapter.close()


# ---------------------------------------------------------------- property: stream == complete


_BLOCKS = st.one_of(
    st.builds(W.text, st.text(max_size=30)),
    st.builds(
        W.tool_use,
        st.from_regex(r"toolu_[a-z0-9]{1,8}", fullmatch=True),
        st.sampled_from(["get_weather", "run"]),
        st.dictionaries(st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=8), st.booleans()), max_size=3),
    ),
    st.builds(W.thinking, st.text(max_size=20), st.text(min_size=1, max_size=12)),
    st.builds(W.redacted_thinking, st.text(min_size=1, max_size=12)),
)


@given(st.lists(_BLOCKS, max_size=5), st.sampled_from(["end_turn", "tool_use", "max_tokens"]), st.data())
@settings(max_examples=150, deadline=None)
def test_7_7_stream_split_anywhere_accumulates_to_the_complete_message(
    blocks: list[dict[str, object]], stop_reason: str, data: st.DataObject
) -> None:
    body = W.message(blocks, stop_reason=stop_reason)  # type: ignore[arg-type]
    raw = b"".join(W.stream_frames(body))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    parser, state = SSEParser(), _StreamState(None)
    events: list[StreamEvent] = []
    for start, end in itertools.pairwise([0, *cuts, len(raw)]):
        for sse in parser.feed(raw[start:end]):
            events.extend(state.on_event(sse.event, json.loads(sse.data)))
    assert state.finished and events[-1].type == StreamEventType.FINISH
    final, expected = events[-1].response, parse_message(body)
    assert final is not None
    assert final.message == expected.message and final.finish_reason == expected.finish_reason
    assert "".join(e.delta or "" for e in events if e.type == StreamEventType.TEXT_DELTA) == expected.text


async def test_3_10_response_format_is_not_sent_and_says_so(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    wire.push(W.message_reply(W.message([W.text('{"a": 1}')])), W.stream_reply(W.message([W.text('{"a": 1}')])))
    fmt = ResponseFormat("json_schema", {"type": "object"})
    resp = await adapter.complete(req(Message.user("q"), response_format=fmt))
    assert "response_format" not in wire.last.json() and "output_format" not in wire.last.json()
    assert [w.code for w in resp.warnings] == ["unsupported_parameter"]
    events = await collect(adapter, req(Message.user("q"), response_format=fmt))
    assert events[-1].response is not None and [w.code for w in events[-1].response.warnings] == ["unsupported_parameter"]


async def test_5_3_tool_choice_none_with_tool_history_keeps_tools_and_sends_none(
    adapter: AnthropicAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.message_reply(W.message([W.text("ok")])))
    call = ToolCallData(id="toolu_1", name="get_weather", arguments={"city": "Oslo"})
    await adapter.complete(
        req(
            Message.user("q"),
            Message(Role.ASSISTANT, [ContentPart.of_tool_call(call)]),
            Message.tool_result("toolu_1", "3C"),
            tools=[WEATHER],
            tool_choice=ToolChoice.none(),
        )
    )
    body = wire.last.json()
    assert body["tool_choice"] == {"type": "none"} and body["tools"][0]["name"] == "get_weather"


_KEYS = ["type", "index", "content_block", "delta", "text", "partial_json", "thinking", "signature", "message",
         "usage", "id", "name", "input", "stop_reason", "error", "content", "data", "output_tokens", "input_tokens"]
_TYPES = ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
          "message_stop", "ping", "error", "text", "tool_use", "thinking", "text_delta", "input_json_delta"]


_VALID_STREAM = [
    json.loads(frame.decode().split("data: ", 1)[1])
    for frame in W.stream_frames(
        W.message([W.thinking("hm", "sig"), W.text("hi"), W.tool_use("toolu_1", "f", {"a": 1})], stop_reason="tool_use")
    )
]


@given(st.one_of(mutated(_VALID_STREAM, _KEYS), st.lists(json_events(_TYPES, _KEYS), max_size=4)))
@settings(max_examples=60, deadline=None)
def test_bad_input_any_event_sequence_raises_only_sdk_or_malformed_errors(events: list[object]) -> None:
    """The adapter turns MALFORMED into StreamError; nothing else may escape the state machine."""
    state = _StreamState(None)
    if not isinstance(events, list):
        return  # the root itself was replaced: not a sequence of events
    for event in events:
        if not isinstance(event, dict):
            continue  # decode_json_event rejects non-objects before the state machine
        try:
            state.on_event(str(event.get("type")), event)
        except (E.SDKError, *MALFORMED):
            return


@given(st.one_of(mutated(W.message([W.thinking("t", "s"), W.text("x"), W.tool_use("toolu_1", "f", {})]), _KEYS),
                 json_events(_TYPES, _KEYS)))
@settings(max_examples=80, deadline=None)
def test_bad_input_any_message_body_parses_or_raises_provider_error(body: object) -> None:
    if not isinstance(body, dict):
        return  # decode_json_body rejects non-objects before parsing
    try:
        parse_message(body)
    except E.ProviderError:
        pass


def test_2_6_adapter_survives_one_event_loop_per_call(wire: LoopbackServer) -> None:
    """Sync wrappers run each call in a fresh ``asyncio.run``; pooled connections must not leak across loops."""
    import asyncio

    adapter = AnthropicAdapter(api_key="k", base_url=wire.base_url)
    texts = []
    for n in range(3):
        wire.push(W.message_reply(W.message([W.text(f"call {n}")])))
        texts.append(asyncio.run(adapter.complete(req(Message.user("q")))).text)
    asyncio.run(adapter.close())
    assert texts == ["call 0", "call 1", "call 2"]


async def test_bad_input_json_answer_to_a_stream_request_says_so(adapter: AnthropicAdapter, wire: LoopbackServer) -> None:
    wire.push(W.message_reply(W.message([W.text("not streamed")])))
    with pytest.raises(E.ProviderError, match="JSON instead of an event stream"):
        await collect(adapter, req(Message.user("q")))
