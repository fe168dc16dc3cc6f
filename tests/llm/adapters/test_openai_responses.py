"""OpenAIAdapter against a loopback server speaking the Responses API (spec §7.3, §7.7, §3.9)."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.llm import errors as E
from codeloop.llm.adapters.flow import MALFORMED
from codeloop.llm.adapters.openai import OpenAIAdapter, _StreamState, parse_response, translate_input
from codeloop.llm.sse import SSEParser
from codeloop.llm.types import (
    AudioData,
    ContentKind,
    ContentPart,
    DocumentData,
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

from . import wire_openai_responses as W
from .json_strategies import json_events, mutated
from .wire_loopback import LoopbackServer, raw_reply, sse_frame, sse_reply, status_cases

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@pytest.fixture
async def adapter(wire: LoopbackServer) -> AsyncIterator[OpenAIAdapter]:
    a = OpenAIAdapter(api_key="sk-test", base_url=wire.base_url + "/v1", timeout=10)
    yield a
    await a.close()


def req(*messages: Message, **kw: object) -> Request:
    return Request(model="gpt-5.2", messages=list(messages), **kw)  # type: ignore[arg-type]


async def collect(adapter: OpenAIAdapter, request: Request) -> list[StreamEvent]:
    return [e async for e in adapter.stream(request)]


# ---------------------------------------------------------------- complete(): request shape


async def test_7_3_complete_sends_native_responses_request(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(W.response_reply(W.response([W.output_message("Hi!")], usage_=W.usage(36, 87, cached=12, reasoning_tokens=40))))
    resp = await adapter.complete(
        req(
            Message.system("You are terse."),
            Message.system("Be kind."),
            Message.developer("Prefer metric units."),
            Message.user("Hello"),
            temperature=0.0,
            top_p=0.9,
            max_tokens=300,
            reasoning_effort="high",
            metadata={"trace": "t-1"},
        )
    )
    sent = wire.last
    assert sent.method == "POST" and sent.path == "/v1/responses"
    assert sent.headers["authorization"] == "Bearer sk-test"
    body = sent.json()
    assert body["model"] == "gpt-5.2"
    assert body["instructions"] == "You are terse.\n\nBe kind."
    assert body["input"] == [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Prefer metric units."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
    ]
    assert body["temperature"] == 0.0 and body["top_p"] == 0.9 and body["max_output_tokens"] == 300
    assert body["reasoning"] == {"effort": "high"}
    assert body["metadata"] == {"trace": "t-1"}
    assert "stream" not in body and "tools" not in body

    assert resp.text == "Hi!" and resp.provider == "openai"
    assert resp.id == "resp_67ccd3a9da748190baa7f1570fe91ac6" and resp.model == "gpt-5.2-2025-12-11"
    assert (resp.finish_reason.reason, resp.finish_reason.raw) == ("stop", "completed")
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.total_tokens) == (36, 87, 123)
    assert (u.reasoning_tokens, u.cache_read_tokens, u.cache_write_tokens) == (40, 12, None)
    assert resp.rate_limit is not None
    assert (resp.rate_limit.requests_limit, resp.rate_limit.requests_remaining) == (500, 499)
    assert (resp.rate_limit.tokens_limit, resp.rate_limit.tokens_remaining) == (30000, 29000)
    assert resp.rate_limit.reset_at is not None
    assert resp.warnings == []


async def test_2_2_bare_host_base_url_gets_v1_and_env_configures(
    wire: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", wire.base_url)
    wire.push(W.response_reply(W.response([W.output_message("ok")])))
    adapter = OpenAIAdapter(default_headers={"x-gateway": "1"})
    try:
        await adapter.complete(req(Message.user("q")))
    finally:
        await adapter.close()
    assert wire.last.path == "/v1/responses"
    assert wire.last.headers["authorization"] == "Bearer sk-env" and wire.last.headers["x-gateway"] == "1"


def test_6_missing_api_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(E.ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIAdapter()


@given(st.lists(st.tuples(st.sampled_from([Role.USER, Role.ASSISTANT, Role.DEVELOPER]), st.text(min_size=1, max_size=4)),
                max_size=10))
@settings(max_examples=200, deadline=None)
def test_7_3_every_message_item_has_type_message(messages: list[tuple[Role, str]]) -> None:
    instructions, items = translate_input([Message(r, [ContentPart.of_text(t)]) for r, t in messages])
    assert instructions is None
    assert all(item["type"] == "message" for item in items)
    assert [c["text"] for item in items for c in item["content"]] == [t for _, t in messages]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (None, None),
        (ToolChoice.auto(), "auto"),
        (ToolChoice.none(), "none"),
        (ToolChoice.required(), "required"),
        (ToolChoice.named("get_weather"), {"type": "function", "name": "get_weather"}),
    ],
)
async def test_5_3_tool_definitions_and_choice_translation(
    adapter: OpenAIAdapter, wire: LoopbackServer, choice: ToolChoice | None, expected: object
) -> None:
    wire.push(W.response_reply(W.response([W.output_message("ok")])))
    await adapter.complete(req(Message.user("weather?"), tools=[WEATHER], tool_choice=choice))
    body = wire.last.json()
    assert body["tools"] == [
        {"type": "function", "name": "get_weather", "description": "Current weather for a city",
         "parameters": WEATHER.parameters, "strict": False}
    ]
    assert body.get("tool_choice") == expected


async def test_5_4_function_call_round_trips_as_function_call_and_output_items(
    adapter: OpenAIAdapter, wire: LoopbackServer
) -> None:
    wire.push(
        W.response_reply(
            W.response([
                W.output_message("Checking both."),
                W.function_call("call_a1", "get_weather", '{"city":"Paris"}'),
                W.function_call("call_b2", "get_weather", '{"city":"Rome"}'),
            ])
        ),
        W.response_reply(W.response([W.output_message("Paris 18C, Rome 24C.")])),
    )
    first = await adapter.complete(req(Message.user("Paris and Rome?"), tools=[WEATHER]))
    assert first.finish_reason.reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_a1", "get_weather", {"city": "Paris"}), ("call_b2", "get_weather", {"city": "Rome"}),
    ]
    second = await adapter.complete(
        req(
            Message.user("Paris and Rome?"),
            first.message,
            Message.tool_result("call_a1", "18C"),
            Message.tool_result("call_b2", {"temp": 24}, is_error=False),
            tools=[WEATHER],
        )
    )
    assert second.text == "Paris 18C, Rome 24C."
    items = wire.last.json()["input"]
    assert items[1:] == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking both."}]},
        {"type": "function_call", "call_id": "call_a1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call", "call_id": "call_b2", "name": "get_weather", "arguments": '{"city": "Rome"}'},
        {"type": "function_call_output", "call_id": "call_a1", "output": "18C"},
        {"type": "function_call_output", "call_id": "call_b2", "output": '{"temp": 24}'},
    ]


async def test_bad_input_function_call_arguments_not_json_are_surfaced_faithfully(
    adapter: OpenAIAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.response_reply(W.response([W.function_call("call_x", "get_weather", '{"city": Paris}')])))
    resp = await adapter.complete(req(Message.user("q"), tools=[WEATHER]))
    [call] = resp.tool_calls
    assert call.raw_arguments == '{"city": Paris}'
    assert call.arguments == {} and call.parse_error is not None and "not valid JSON" in call.parse_error
    wire.push(W.response_reply(W.response([W.output_message("ok")])))
    await adapter.complete(req(Message.user("q"), resp.message, Message.tool_result("call_x", "bad args", is_error=True)))
    assert wire.last.json()["input"][1]["arguments"] == '{"city": Paris}'


async def test_3_9_reasoning_item_round_trips_with_encrypted_content(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(
        W.response_reply(
            W.response(
                [W.reasoning("Compared both options.", encrypted_content="gAAAAABoXyZ=="), W.output_message("B.")],
                usage_=W.usage(50, 200, reasoning_tokens=180),
            )
        ),
        W.response_reply(W.response([W.output_message("ok")])),
    )
    first = await adapter.complete(req(Message.user("A or B?"), reasoning_effort="low"))
    assert first.reasoning == "Compared both options."
    assert first.usage.reasoning_tokens == 180 and first.usage.output_tokens == 200
    await adapter.complete(req(Message.user("A or B?"), first.message, Message.user("why?")))
    items = wire.last.json()["input"]
    assert items[1] == {
        "type": "reasoning",
        "id": "rs_6820f383d7c08191846711c5df8233bc",
        "summary": [{"type": "summary_text", "text": "Compared both options."}],
        "encrypted_content": "gAAAAABoXyZ==",
    }
    assert items[2]["role"] == "assistant"


async def test_3_5_thinking_of_another_provider_is_not_sent(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(W.response_reply(W.response([W.output_message("ok")])))
    foreign = Message(Role.ASSISTANT, [ContentPart.of_thinking("claude thoughts", "EqQBsig"), ContentPart.of_text("hi")])
    await adapter.complete(req(Message.user("a"), foreign))
    assert [i["type"] for i in wire.last.json()["input"]] == ["message", "message"]


async def test_3_5_images_and_documents_as_input_parts(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    wire.push(W.response_reply(W.response([W.output_message("ok")])))
    await adapter.complete(
        req(
            Message(
                Role.USER,
                [
                    ContentPart.of_text("Look"),
                    ContentPart.of_image(ImageData(data=png, detail="high")),
                    ContentPart.of_image(ImageData(url="https://example.com/a.png")),
                    ContentPart(kind=ContentKind.DOCUMENT, document=DocumentData(data=b"%PDF-1.7", file_name="spec.pdf",
                                                                                   media_type="application/pdf")),
                ],
            )
        )
    )
    content = wire.last.json()["input"][0]["content"]
    assert content[1] == {
        "type": "input_image", "image_url": "data:image/png;base64," + base64.b64encode(png).decode(), "detail": "high"
    }
    assert content[2] == {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"}
    assert content[3] == {
        "type": "input_file", "filename": "spec.pdf",
        "file_data": "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.7").decode(),
    }


async def test_8_3_audio_is_rejected_before_sending(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    with pytest.raises(E.InvalidRequestError, match="audio"):
        await adapter.complete(req(Message(Role.USER, [ContentPart(kind=ContentKind.AUDIO, audio=AudioData(data=b"x"))])))
    assert wire.requests == []


async def test_3_10_response_format_maps_to_text_format(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    wire.push(W.response_reply(W.response([W.output_message('{"name":"Alice"}')])))
    await adapter.complete(req(Message.user("q"), response_format=ResponseFormat("json_schema", schema, strict=True)))
    assert wire.last.json()["text"] == {
        "format": {"type": "json_schema", "name": "response", "schema": schema, "strict": True}
    }


async def test_2_8_provider_options_merge_into_body(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(W.response_reply(W.response([W.output_message("ok")])))
    await adapter.complete(
        req(
            Message.user("q"),
            tools=[WEATHER],
            reasoning_effort="medium",
            provider_options={
                "openai": {"include": ["reasoning.encrypted_content"], "store": False, "reasoning": {"summary": "auto"},
                           "tools": [{"type": "web_search_preview"}]},
                "anthropic": {"auto_cache": False},
            },
        )
    )
    body = wire.last.json()
    assert body["include"] == ["reasoning.encrypted_content"] and body["store"] is False
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert [t.get("name", t["type"]) for t in body["tools"]] == ["get_weather", "web_search_preview"]
    assert "auto_cache" not in body


async def test_stop_sequences_are_dropped_with_a_warning(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(W.response_reply(W.response([W.output_message("ok")])))
    resp = await adapter.complete(req(Message.user("q"), stop_sequences=["END"]))
    assert "stop" not in wire.last.json()
    assert [w.code for w in resp.warnings] == ["unsupported_parameter"]


@pytest.mark.parametrize(
    ("reason", "unified"), [("max_output_tokens", "length"), ("content_filter", "content_filter")]
)
async def test_3_8_incomplete_response_finish_reason(
    adapter: OpenAIAdapter, wire: LoopbackServer, reason: str, unified: str
) -> None:
    wire.push(W.response_reply(W.response([W.output_message("trunc")], status="incomplete", incomplete_reason=reason)))
    resp = await adapter.complete(req(Message.user("q")))
    assert (resp.finish_reason.reason, resp.finish_reason.raw) == (unified, reason)


async def test_7_5_unknown_output_items_are_warned_not_fatal(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(
        W.response_reply(
            W.response([{"type": "web_search_call", "id": "ws_1", "status": "completed"}, W.output_message("found")])
        )
    )
    resp = await adapter.complete(req(Message.user("q")))
    assert resp.text == "found"
    assert [w.code for w in resp.warnings] == ["unknown_content"]


async def test_failed_response_raises_its_error(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    body = W.response([], status="failed")
    body["error"] = {"code": "server_error", "message": "The model crashed"}
    wire.push(W.response_reply(body))
    with pytest.raises(E.ServerError, match="The model crashed"):
        await adapter.complete(req(Message.user("q")))


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(("status", "cls", "retryable"), status_cases())
@pytest.mark.parametrize("streaming", [False, True])
async def test_6_4_http_status_maps_to_error_class(
    adapter: OpenAIAdapter, wire: LoopbackServer, status: int, cls: type[E.SDKError], retryable: bool, streaming: bool
) -> None:
    headers = {"retry-after": "2"} if status == 429 else None
    wire.push(W.error_reply(status, f"scripted failure {status}", headers=headers))
    with pytest.raises(E.SDKError) as info:
        if streaming:
            await collect(adapter, req(Message.user("q")))
        else:
            await adapter.complete(req(Message.user("q")))
    err = info.value
    assert type(err) is cls and err.retryable is retryable
    assert f"scripted failure {status}" in err.message
    if isinstance(err, E.ProviderError):
        assert err.status_code == status and err.provider == "openai"
        assert err.raw is not None and err.raw["error"]["message"] == f"scripted failure {status}"
        assert err.retry_after == (2.0 if status == 429 else None)


async def test_6_5_quota_429_is_not_retryable(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    body = {"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota", "param": None,
                      "code": "insufficient_quota"}}
    wire.push(raw_reply(json.dumps(body).encode(), status=429))
    with pytest.raises(E.QuotaExceededError) as info:
        await adapter.complete(req(Message.user("q")))
    assert info.value.retryable is False


async def test_6_5_context_length_code_on_400(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    body = {"error": {"message": "Your input exceeds the context window of this model.", "type": "invalid_request_error",
                      "param": "input", "code": "context_length_exceeded"}}
    wire.push(raw_reply(json.dumps(body).encode(), status=400))
    with pytest.raises(E.ContextLengthError):
        await adapter.complete(req(Message.user("q")))


async def test_bad_input_malformed_json_body_is_a_provider_error(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(raw_reply(b"<html>502 Bad Gateway</html>", content_type="text/html"))
    with pytest.raises(E.ProviderError, match="not JSON"):
        await adapter.complete(req(Message.user("q")))


async def test_bad_input_json_without_output_list_is_a_provider_error(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(raw_reply(b'{"id": "resp_1", "status": "completed", "output": {"oops": 1}}'))
    with pytest.raises(E.ProviderError, match="unexpected shape"):
        await adapter.complete(req(Message.user("q")))


# ---------------------------------------------------------------- stream()


async def test_7_7_stream_text_and_finish_match_complete(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    body = W.response([W.output_message("Streaming works fine.")], usage_=W.usage(20, 5, cached=8, reasoning_tokens=2))
    wire.push(W.stream_reply(body), W.response_reply(body))
    events = await collect(adapter, req(Message.user("hi")))
    assert wire.requests[0].json()["stream"] is True
    types = [e.type for e in events]
    assert types[0] == StreamEventType.STREAM_START
    assert types[1] == StreamEventType.TEXT_START and types[-2] == StreamEventType.TEXT_END
    assert types[-1] == StreamEventType.FINISH
    assert "".join(e.delta or "" for e in events if e.type == StreamEventType.TEXT_DELTA) == "Streaming works fine."
    finish = events[-1]
    complete = await adapter.complete(req(Message.user("hi")))
    assert finish.response is not None and finish.response.message == complete.message
    assert finish.usage == complete.usage and finish.usage is not None
    assert (finish.usage.reasoning_tokens, finish.usage.cache_read_tokens) == (2, 8)
    assert finish.finish_reason == complete.finish_reason
    assert finish.response.rate_limit is not None and finish.response.rate_limit.requests_remaining == 499


async def test_7_7_stream_function_call_start_delta_end(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    body = W.response([W.function_call("call_z9", "get_weather", '{"city": "New York"}')])
    wire.push(W.stream_reply(body))
    events = await collect(adapter, req(Message.user("q"), tools=[WEATHER]))
    tool_events = [e for e in events if e.type.startswith("tool_call")]
    assert tool_events[0].type == StreamEventType.TOOL_CALL_START
    assert tool_events[0].tool_call is not None and tool_events[0].tool_call.id == "call_z9"
    assert "".join(e.delta or "" for e in tool_events if e.type == StreamEventType.TOOL_CALL_DELTA) == '{"city": "New York"}'
    end = tool_events[-1]
    assert end.type == StreamEventType.TOOL_CALL_END and end.tool_call is not None
    assert (end.tool_call.id, end.tool_call.name, end.tool_call.arguments) == ("call_z9", "get_weather", {"city": "New York"})
    assert events[-1].finish_reason is not None and events[-1].finish_reason.reason == "tool_calls"


async def test_7_7_stream_reasoning_summary_deltas(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    body = W.response([W.reasoning("Thinking hard.", encrypted_content="enc=="), W.output_message("Done.")])
    wire.push(W.stream_reply(body))
    events = await collect(adapter, req(Message.user("q")))
    types = [e.type for e in events]
    assert types.index(StreamEventType.REASONING_START) < types.index(StreamEventType.REASONING_END)
    assert "".join(e.reasoning_delta or "" for e in events) == "Thinking hard."
    final = events[-1].response
    assert final is not None and final.reasoning == "Thinking hard."


async def test_7_7_terminal_event_without_output_uses_the_items_seen(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    body = W.response([W.output_message("kept")])
    frames = W.stream_frames(body, final=False)
    frames.append(sse_frame({"type": "response.completed", "sequence_number": 99, "response": {**body, "output": []}},
                            "response.completed"))
    wire.push(sse_reply(frames))
    events = await collect(adapter, req(Message.user("q")))
    assert events[-1].response is not None and events[-1].response.text == "kept"


async def test_bad_input_stream_ending_without_response_completed_is_a_stream_error(
    adapter: OpenAIAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.stream_reply(W.response([W.output_message("partial")]), final=False))
    with pytest.raises(E.StreamError, match=r"response\.completed"):
        await collect(adapter, req(Message.user("q")))


async def test_7_7_stream_cut_mid_way_is_a_stream_error(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(W.stream_reply(W.response([W.output_message("this will be cut")]), cut_after=5))
    seen: list[StreamEvent] = []
    with pytest.raises(E.StreamError):
        async for event in adapter.stream(req(Message.user("q"))):
            seen.append(event)
    assert seen[0].type == StreamEventType.STREAM_START


async def test_7_7_error_event_and_failed_response_in_stream(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    frames = W.stream_frames(W.response([W.output_message("x")]))[:2]
    wire.push(sse_reply([*frames, W.stream_error_frame("rate_limit_exceeded", "Slow down")]))
    with pytest.raises(E.RateLimitError, match="Slow down"):
        await collect(adapter, req(Message.user("q")))
    failed = W.response([], status="failed")
    failed["error"] = {"code": "server_error", "message": "boom"}
    wire.push(W.stream_reply(failed))
    with pytest.raises(E.ServerError, match="boom"):
        await collect(adapter, req(Message.user("q")))


async def test_bad_input_unknown_stream_events_pass_through(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    frames = W.stream_frames(W.response([W.output_message("ok")]))
    frames.insert(2, sse_frame({"type": "response.brand_new_event", "sequence_number": 1}, "response.brand_new_event"))
    wire.push(sse_reply(frames))
    events = await collect(adapter, req(Message.user("q")))
    assert [e.raw and e.raw["type"] for e in events if e.type == StreamEventType.PROVIDER_EVENT] == [
        "response.brand_new_event"
    ]
    assert events[-1].response is not None and events[-1].response.text == "ok"


async def test_bad_input_stream_event_not_json_is_a_stream_error(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(sse_reply([*W.stream_frames(W.response([W.output_message("x")]))[:1], sse_frame("{nope")]))
    with pytest.raises(E.StreamError, match="not JSON"):
        await collect(adapter, req(Message.user("q")))


async def test_bad_input_stream_tool_arguments_not_json(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    wire.push(W.stream_reply(W.response([W.function_call("call_q", "get_weather", '{"city": ')])))
    events = await collect(adapter, req(Message.user("q"), tools=[WEATHER]))
    end = next(e for e in events if e.type == StreamEventType.TOOL_CALL_END)
    assert end.tool_call is not None and end.tool_call.raw_arguments == '{"city": '
    assert end.tool_call.parse_error is not None


async def test_assistant_history_tool_call_with_string_arguments_is_sent_verbatim(
    adapter: OpenAIAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.response_reply(W.response([W.output_message("ok")])))
    call = ToolCallData(id="call_s", name="get_weather", arguments='{"city":"Lima"}')
    await adapter.complete(req(Message.user("q"), Message(Role.ASSISTANT, [ContentPart.of_tool_call(call)])))
    assert wire.last.json()["input"][1]["arguments"] == '{"city":"Lima"}'


async def test_7_7_stream_without_output_index_keys_items_by_id(adapter: OpenAIAdapter, wire: LoopbackServer) -> None:
    """llama.cpp's /v1/responses stream names items only by ``item_id`` (no ``output_index``)."""
    body = W.response([
        W.output_message("Two calls."),
        W.function_call("call_1", "get_weather", '{"city": "Oslo"}'),
        W.function_call("call_2", "get_weather", '{"city": "Bergen"}'),
    ])
    frames = []
    for frame in W.stream_frames(body):
        event_line, data_line = frame.decode().strip().split("\n")
        data = json.loads(data_line.removeprefix("data: "))
        data.pop("output_index", None)
        frames.append(sse_frame(data, event_line.removeprefix("event: ")))
    wire.push(sse_reply(frames))
    events = await collect(adapter, req(Message.user("q"), tools=[WEATHER]))
    ends = [e.tool_call for e in events if e.type == StreamEventType.TOOL_CALL_END]
    assert [(c.id, c.arguments) for c in ends if c] == [("call_1", {"city": "Oslo"}), ("call_2", {"city": "Bergen"})]
    deltas = [(e.tool_call.id, e.delta) for e in events if e.type == StreamEventType.TOOL_CALL_DELTA and e.tool_call]
    assert "".join(d for i, d in deltas if i == "call_2") == '{"city": "Bergen"}'
    final = events[-1].response
    assert final is not None and final.text == "Two calls." and len(final.tool_calls) == 2


_ITEMS = st.one_of(
    st.builds(W.output_message, st.text(max_size=30)),
    st.builds(
        lambda call_id, name, args: W.function_call(call_id, name, json.dumps(args)),
        st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True),
        st.sampled_from(["get_weather", "run"]),
        st.dictionaries(st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=8)), max_size=3),
    ),
    st.builds(W.reasoning, st.text(max_size=20), st.one_of(st.none(), st.text(min_size=1, max_size=12))),
)


@given(st.lists(_ITEMS, max_size=5), st.data())
@settings(max_examples=150, deadline=None)
def test_7_7_stream_split_anywhere_accumulates_to_the_complete_response(
    items: list[dict[str, object]], data: st.DataObject
) -> None:
    body = W.response(items)  # type: ignore[arg-type]
    raw = b"".join(W.stream_frames(body))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    parser, state = SSEParser(), _StreamState(None, [])
    events: list[StreamEvent] = []
    for start, end in itertools.pairwise([0, *cuts, len(raw)]):
        for sse in parser.feed(raw[start:end]):
            events.extend(state.on_event(json.loads(sse.data)))
    assert state.finished and events[-1].type == StreamEventType.FINISH
    final, expected = events[-1].response, parse_response(body)
    assert final is not None and final.message == expected.message
    assert "".join(e.delta or "" for e in events if e.type == StreamEventType.TEXT_DELTA) == expected.text
    ends = [e.tool_call for e in events if e.type == StreamEventType.TOOL_CALL_END]
    assert [(c.id, c.arguments) for c in ends if c] == [(c.id, c.arguments) for c in expected.tool_calls]


_KEYS = ["type", "output_index", "item_id", "item", "delta", "response", "output", "status", "content", "text",
         "call_id", "name", "arguments", "summary", "encrypted_content", "usage", "error", "code", "message", "id",
         "incomplete_details", "reason", "input_tokens", "output_tokens"]
_TYPES = ["response.created", "response.output_item.added", "response.output_text.delta",
          "response.function_call_arguments.delta", "response.reasoning_summary_text.delta",
          "response.output_item.done", "response.completed", "response.incomplete", "response.failed", "error",
          "message", "function_call", "reasoning", "output_text"]


_VALID_BODY = {
    k: v
    for k, v in W.response([
        W.reasoning("r", encrypted_content="e"), W.output_message("hi"), W.function_call("call_1", "f", '{"a":1}'),
    ]).items()
    if k in ("id", "status", "model", "output", "usage", "incomplete_details", "error")
}
_VALID_STREAM = [
    json.loads(f.decode().split("data: ", 1)[1])
    for f in W.stream_frames(_VALID_BODY)
    if b"response.in_progress" not in f and b"content_part" not in f
]


@given(st.one_of(mutated(_VALID_STREAM, _KEYS), st.lists(json_events(_TYPES, _KEYS), max_size=4)))
@settings(max_examples=60, deadline=None)
def test_bad_input_any_event_sequence_raises_only_sdk_or_malformed_errors(events: list[object]) -> None:
    """The adapter turns MALFORMED into StreamError; nothing else may escape the state machine."""
    state = _StreamState(None, [])
    if not isinstance(events, list):
        return  # the root itself was replaced: not a sequence of events
    for event in events:
        if not isinstance(event, dict):
            continue  # decode_json_event rejects non-objects before the state machine
        try:
            state.on_event(event)
        except (E.SDKError, *MALFORMED):
            return


@given(st.one_of(mutated(_VALID_BODY, _KEYS), json_events(_TYPES, _KEYS)))
@settings(max_examples=80, deadline=None)
def test_bad_input_any_response_body_parses_or_raises_sdk_error(body: object) -> None:
    if not isinstance(body, dict):
        return  # decode_json_body rejects non-objects before parsing
    try:
        parse_response(body)
    except E.SDKError:
        pass


async def test_2_2_organization_and_default_headers_are_sent(wire: LoopbackServer) -> None:
    adapter = OpenAIAdapter(api_key="sk-o", base_url=wire.base_url + "/v1", organization="org-42",
                            default_headers={"openai-project": "proj_7"})
    wire.push(W.response_reply(W.response([W.output_message("ok")])))
    try:
        await adapter.complete(req(Message.user("q")))
    finally:
        await adapter.close()
    assert wire.last.headers["openai-organization"] == "org-42" and wire.last.headers["openai-project"] == "proj_7"
