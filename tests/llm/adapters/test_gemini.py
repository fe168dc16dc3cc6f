"""GeminiAdapter against a loopback server speaking generateContent / SSE (spec §7.3, §7.7)."""

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
from codeloop.llm.adapters.gemini import GeminiAdapter, _StreamState, parse_response, translate_contents
from codeloop.llm.sse import SSEParser
from codeloop.llm.types import (
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

from . import wire_gemini as W
from .json_strategies import json_events, mutated
from .wire_loopback import LoopbackServer, raw_reply, sse_frame, sse_reply, status_cases

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
MODEL = "gemini-2.5-flash"


@pytest.fixture
async def adapter(wire: LoopbackServer) -> AsyncIterator[GeminiAdapter]:
    a = GeminiAdapter(api_key="AIza-test", base_url=wire.base_url, timeout=10)
    yield a
    await a.close()


def req(*messages: Message, **kw: object) -> Request:
    return Request(model=kw.pop("model", MODEL), messages=list(messages), **kw)  # type: ignore[arg-type]


async def collect(adapter: GeminiAdapter, request: Request) -> list[StreamEvent]:
    return [e async for e in adapter.stream(request)]


# ---------------------------------------------------------------- complete(): request shape


async def test_7_3_complete_sends_native_generate_content_request(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(W.response_reply(W.response([W.text("Hello!")], usage_=W.usage(14, 9, thoughts=30, cached=6))))
    resp = await adapter.complete(
        req(
            Message.system("Be brief."),
            Message.developer("Use metric."),
            Message.user("Hi"),
            Message.assistant("Hello."),
            Message.user("Weather?"),
            temperature=0.0,
            top_p=0.8,
            max_tokens=200,
            stop_sequences=["END"],
        )
    )
    sent = wire.last
    assert sent.method == "POST" and sent.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert sent.headers["x-goog-api-key"] == "AIza-test" and "key" not in sent.query
    body = sent.json()
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}, {"text": "Use metric."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Hi"}]},
        {"role": "model", "parts": [{"text": "Hello."}]},
        {"role": "user", "parts": [{"text": "Weather?"}]},
    ]
    assert body["generationConfig"] == {"temperature": 0.0, "topP": 0.8, "maxOutputTokens": 200, "stopSequences": ["END"]}

    assert resp.text == "Hello!" and resp.provider == "gemini"
    assert resp.id == "Il0taoSYJ5Cez7IPk9mR4Qg" and resp.model == "gemini-2.5-flash"
    assert (resp.finish_reason.reason, resp.finish_reason.raw) == ("stop", "STOP")
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.total_tokens) == (14, 39, 53)
    assert (u.reasoning_tokens, u.cache_read_tokens, u.cache_write_tokens) == (30, 6, None)


async def test_7_8_key_in_query_parameter_and_versioned_base_url(wire: LoopbackServer) -> None:
    adapter = GeminiAdapter(api_key="AIza-q", base_url=wire.base_url + "/v1beta/", key_in_query=True)
    wire.push(W.response_reply(W.response([W.text("ok")])))
    try:
        await adapter.complete(req(Message.user("q"), model="models/gemini-2.5-pro"))
    finally:
        await adapter.close()
    assert wire.last.path == "/v1beta/models/gemini-2.5-pro:generateContent"
    assert wire.last.query == {"key": "AIza-q"} and "x-goog-api-key" not in wire.last.headers


def test_6_missing_api_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(E.ConfigurationError, match="GEMINI_API_KEY"):
        GeminiAdapter()


async def test_2_2_key_and_base_url_from_environment(wire: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-env")
    monkeypatch.setenv("GEMINI_BASE_URL", wire.base_url)
    wire.push(W.response_reply(W.response([W.text("ok")])))
    adapter = GeminiAdapter()
    try:
        await adapter.complete(req(Message.user("q")))
    finally:
        await adapter.close()
    assert wire.last.headers["x-goog-api-key"] == "AIza-env"


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        (None, None),
        (ToolChoice.auto(), {"mode": "AUTO"}),
        (ToolChoice.none(), {"mode": "NONE"}),
        (ToolChoice.required(), {"mode": "ANY"}),
        (ToolChoice.named("get_weather"), {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
    ],
)
async def test_5_3_tool_declarations_and_choice_translation(
    adapter: GeminiAdapter, wire: LoopbackServer, choice: ToolChoice | None, config: object
) -> None:
    wire.push(W.response_reply(W.response([W.text("ok")])))
    await adapter.complete(req(Message.user("q"), tools=[WEATHER], tool_choice=choice))
    body = wire.last.json()
    assert body["tools"] == [
        {"functionDeclarations": [{"name": "get_weather", "description": "Current weather for a city",
                                   "parametersJsonSchema": WEATHER.parameters}]}
    ]
    assert body.get("toolConfig") == (None if config is None else {"functionCallingConfig": config})


async def test_7_3_synthetic_call_ids_map_back_to_function_names_with_signature(
    adapter: GeminiAdapter, wire: LoopbackServer
) -> None:
    wire.push(
        W.response_reply(
            W.response([
                W.function_call("get_weather", {"city": "Paris"}, thought_signature="CiQBsigA=="),
                W.function_call("get_weather", {"city": "Rome"}),
            ])
        ),
        W.response_reply(W.response([W.text("Paris 18C, Rome 24C")])),
    )
    first = await adapter.complete(req(Message.user("Paris and Rome?"), tools=[WEATHER]))
    assert first.finish_reason.reason == "tool_calls" and first.finish_reason.raw == "STOP"
    paris, rome = first.tool_calls
    assert paris.id != rome.id and paris.id.startswith("call_") and rome.id.startswith("call_")
    assert (paris.name, paris.arguments, paris.signature) == ("get_weather", {"city": "Paris"}, "CiQBsigA==")
    assert rome.signature is None

    await adapter.complete(
        req(
            Message.user("Paris and Rome?"),
            first.message,
            Message.tool_result(paris.id, "18C"),
            Message.tool_result(rome.id, {"temp_c": 24}),
            tools=[WEATHER],
        )
    )
    contents = wire.last.json()["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "CiQBsigA=="},
            {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
        ],
    }
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"result": "18C"}}},
            {"functionResponse": {"name": "get_weather", "response": {"temp_c": 24}}},
        ],
    }


async def test_7_3_tool_result_whose_call_left_the_history_uses_issued_ids_then_name(
    adapter: GeminiAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.response_reply(W.response([W.function_call("get_weather", {"city": "Oslo"})])))
    first = await adapter.complete(req(Message.user("q"), tools=[WEATHER]))
    call_id = first.tool_calls[0].id
    wire.push(W.response_reply(W.response([W.text("ok")])), W.response_reply(W.response([W.text("ok")])))
    await adapter.complete(req(Message.user("q"), Message.tool_result(call_id, "3C", is_error=True)))
    assert wire.last.json()["contents"][0]["parts"][1] == {
        "functionResponse": {"name": "get_weather", "response": {"error": "3C"}}
    }
    await adapter.complete(req(Message.user("q"), Message.tool_result("call_elsewhere", "x", name="lookup")))
    assert wire.last.json()["contents"][0]["parts"][1]["functionResponse"]["name"] == "lookup"


async def test_bad_input_tool_result_for_unknown_call_is_a_clear_error(
    adapter: GeminiAdapter, wire: LoopbackServer
) -> None:
    with pytest.raises(E.InvalidRequestError, match="call_nowhere"):
        await adapter.complete(req(Message.user("q"), Message.tool_result("call_nowhere", "x")))
    assert wire.requests == []


async def test_3_5_thought_parts_and_text_signatures_round_trip(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(
        W.response_reply(
            W.response(
                [W.thought("Planning the answer."), W.text("The answer is 4.", thought_signature="EhsigTEXT=")],
                usage_=W.usage(10, 5, thoughts=12),
            )
        ),
        W.response_reply(W.response([W.text("ok")])),
    )
    first = await adapter.complete(req(Message.user("2+2?")))
    assert first.reasoning == "Planning the answer."
    assert first.text == "The answer is 4."
    assert first.usage.reasoning_tokens == 12
    assert [p.kind for p in first.message.content] == [
        ContentKind.THINKING, ContentKind.REDACTED_THINKING, ContentKind.TEXT,
    ]
    await adapter.complete(req(Message.user("2+2?"), first.message, Message.user("sure?")))
    model_turn = wire.last.json()["contents"][1]
    # The unsigned thought summary is not input; the text part gets its signature back.
    assert model_turn == {"role": "model", "parts": [{"text": "The answer is 4.", "thoughtSignature": "EhsigTEXT="}]}


@given(st.lists(st.tuples(st.sampled_from([Role.USER, Role.ASSISTANT, Role.SYSTEM]), st.text(min_size=1, max_size=4)),
                max_size=10))
@settings(max_examples=200, deadline=None)
def test_7_3_contents_alternate_roles_and_keep_all_text(messages: list[tuple[Role, str]]) -> None:
    system, contents = translate_contents([Message(r, [ContentPart.of_text(t)]) for r, t in messages])
    roles = [c["role"] for c in contents]
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert [p["text"] for c in contents for p in c["parts"]] == [t for r, t in messages if r != Role.SYSTEM]
    assert (system is None) == all(r != Role.SYSTEM for r, _ in messages)


async def test_3_5_images_inline_url_and_local_file(adapter: GeminiAdapter, wire: LoopbackServer, tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    local = tmp_path / "diagram.png"
    local.write_bytes(b"\x89PNGlocal")
    wire.push(W.response_reply(W.response([W.text("ok")])))
    await adapter.complete(
        req(
            Message(
                Role.USER,
                [
                    ContentPart.of_text("see"),
                    ContentPart.of_image(ImageData(data=b"GIF89a", media_type="image/gif")),
                    ContentPart.of_image(ImageData(url="gs://bucket/cat.jpg", media_type="image/jpeg")),
                    ContentPart.of_image(ImageData(url=str(local))),
                ],
            )
        )
    )
    parts = wire.last.json()["contents"][0]["parts"]
    assert parts[1] == {"inlineData": {"mimeType": "image/gif", "data": base64.b64encode(b"GIF89a").decode()}}
    assert parts[2] == {"fileData": {"mimeType": "image/jpeg", "fileUri": "gs://bucket/cat.jpg"}}
    assert parts[3] == {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(b"\x89PNGlocal").decode()}}


@pytest.mark.parametrize(
    ("model", "effort", "thinking"),
    [("gemini-2.5-flash", "low", {"thinkingBudget": 1024}), ("gemini-3-pro-preview", "high", {"thinkingLevel": "high"})],
)
async def test_3_9_reasoning_effort_maps_to_thinking_config(
    adapter: GeminiAdapter, wire: LoopbackServer, model: str, effort: str, thinking: dict[str, object]
) -> None:
    wire.push(W.response_reply(W.response([W.text("ok")])))
    await adapter.complete(req(Message.user("q"), model=model, reasoning_effort=effort))
    assert wire.last.json()["generationConfig"]["thinkingConfig"] == thinking


async def test_3_10_response_format_uses_json_mime_type_and_json_schema(
    adapter: GeminiAdapter, wire: LoopbackServer
) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    wire.push(W.response_reply(W.response([W.text('{"a": 1}')])))
    await adapter.complete(req(Message.user("q"), response_format=ResponseFormat("json_schema", schema)))
    config = wire.last.json()["generationConfig"]
    assert config == {"responseMimeType": "application/json", "responseJsonSchema": schema}


async def test_2_8_provider_options_merge_into_body(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(W.response_reply(W.response([W.text("ok")])))
    safety = [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
    await adapter.complete(
        req(
            Message.user("q"),
            temperature=0.5,
            tools=[WEATHER],
            provider_options={"gemini": {"safetySettings": safety, "cachedContent": "cachedContents/abc",
                                         "generationConfig": {"candidateCount": 1}, "tools": [{"googleSearch": {}}]}},
        )
    )
    body = wire.last.json()
    assert body["tools"][1] == {"googleSearch": {}} and "functionDeclarations" in body["tools"][0]
    assert body["safetySettings"] == safety and body["cachedContent"] == "cachedContents/abc"
    assert body["generationConfig"] == {"temperature": 0.5, "candidateCount": 1}


@pytest.mark.parametrize(
    ("raw", "unified"),
    [("MAX_TOKENS", "length"), ("SAFETY", "content_filter"), ("RECITATION", "content_filter"), ("OTHER", "other")],
)
async def test_3_8_finish_reason_mapping(adapter: GeminiAdapter, wire: LoopbackServer, raw: str, unified: str) -> None:
    wire.push(W.response_reply(W.response([W.text("x")], finish_reason=raw)))
    resp = await adapter.complete(req(Message.user("q")))
    assert (resp.finish_reason.reason, resp.finish_reason.raw) == (unified, raw)


async def test_blocked_prompt_returns_content_filter_with_a_warning(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(W.response_reply({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": W.usage(8, 0),
                                "modelVersion": MODEL, "responseId": "r1"}))
    resp = await adapter.complete(req(Message.user("q")))
    assert (resp.finish_reason.reason, resp.finish_reason.raw) == ("content_filter", "SAFETY")
    assert resp.text == "" and [w.code for w in resp.warnings] == ["blocked"]


async def test_7_5_unknown_parts_are_warned_not_fatal(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(W.response_reply(W.response([{"executableCode": {"language": "PYTHON", "code": "print(1)"}}, W.text("1")])))
    resp = await adapter.complete(req(Message.user("q")))
    assert resp.text == "1" and [w.code for w in resp.warnings] == ["unknown_content"]
    assert "executableCode" in resp.warnings[0].message


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(("status", "cls", "retryable"), status_cases(504))
@pytest.mark.parametrize("streaming", [False, True])
async def test_6_4_http_status_maps_to_error_class(
    adapter: GeminiAdapter, wire: LoopbackServer, status: int, cls: type[E.SDKError], retryable: bool, streaming: bool
) -> None:
    headers = {"retry-after": "11"} if status == 429 else None
    wire.push(W.error_reply(status, f"scripted failure {status}", headers=headers))
    with pytest.raises(E.SDKError) as info:
        if streaming:
            await collect(adapter, req(Message.user("q")))
        else:
            await adapter.complete(req(Message.user("q")))
    err = info.value
    assert type(err) is cls and err.retryable is retryable
    if status != 413:  # the front end answers 413 with an HTML page
        assert f"scripted failure {status}" in err.message
    if isinstance(err, E.ProviderError):
        assert err.status_code == status and err.provider == "gemini"
        assert err.retry_after == (11.0 if status == 429 else None)
        if status != 413:
            assert err.raw is not None and err.raw["error"]["status"] == W.STATUSES[status]
            assert err.error_code == W.STATUSES[status]


async def test_6_7_retry_info_delay_used_when_no_retry_after_header(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(W.error_reply(429, "Resource has been exhausted (e.g. check quota).", retry_delay="37s"))
    with pytest.raises(E.RateLimitError) as info:
        await adapter.complete(req(Message.user("q")))
    assert info.value.retry_after == 37.0 and info.value.error_code == "RESOURCE_EXHAUSTED"


async def test_6_4_grpc_status_decides_when_http_status_is_unlisted(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    body = b'{"error": {"code": 499, "message": "The operation was cancelled.", "status": "UNAVAILABLE"}}'
    wire.push(raw_reply(body, status=499))
    with pytest.raises(E.ServerError):
        await adapter.complete(req(Message.user("q")))


async def test_bad_input_malformed_json_body_is_a_provider_error(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(raw_reply(b'{"candidates": [{"content": '))
    with pytest.raises(E.ProviderError, match="not JSON"):
        await adapter.complete(req(Message.user("q")))


async def test_bad_input_parts_not_a_list_is_a_provider_error(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(raw_reply(b'{"candidates": [{"content": {"parts": "text"}}]}'))
    with pytest.raises(E.ProviderError, match="unexpected shape"):
        await adapter.complete(req(Message.user("q")))


# ---------------------------------------------------------------- stream()


async def test_7_7_stream_text_and_finish_match_complete(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    body = W.response([W.text("Streaming from Gemini works.")], usage_=W.usage(12, 7, thoughts=3))
    wire.push(W.stream_reply(body), W.response_reply(body))
    events = await collect(adapter, req(Message.user("hi")))
    sent = wire.requests[0]
    assert sent.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent" and sent.query == {"alt": "sse"}
    types = [e.type for e in events]
    assert types[0] == StreamEventType.STREAM_START and types[1] == StreamEventType.TEXT_START
    assert types[-2] == StreamEventType.TEXT_END and types[-1] == StreamEventType.FINISH
    assert "".join(e.delta or "" for e in events if e.type == StreamEventType.TEXT_DELTA) == "Streaming from Gemini works."
    finish = events[-1]
    complete = await adapter.complete(req(Message.user("hi")))
    assert finish.response is not None and finish.response.message == complete.message
    assert finish.usage == complete.usage and finish.finish_reason == complete.finish_reason


async def test_7_7_stream_function_calls_emit_start_and_end_and_round_trip(
    adapter: GeminiAdapter, wire: LoopbackServer
) -> None:
    body = W.response([W.text("Let me look."), W.function_call("get_weather", {"city": "NYC"}, thought_signature="sigFC")])
    wire.push(W.stream_reply(body), W.response_reply(W.response([W.text("ok")])))
    events = await collect(adapter, req(Message.user("q"), tools=[WEATHER]))
    tool_events = [e for e in events if e.type.startswith("tool_call")]
    assert [e.type for e in tool_events] == [StreamEventType.TOOL_CALL_START, StreamEventType.TOOL_CALL_END]
    start, end = (e.tool_call for e in tool_events)
    assert start is not None and end is not None and start.id == end.id
    assert (end.name, end.arguments, end.signature) == ("get_weather", {"city": "NYC"}, "sigFC")
    final = events[-1].response
    assert final is not None and final.tool_calls[0].id == end.id
    assert final.finish_reason.reason == "tool_calls"
    await adapter.complete(req(Message.user("q"), final.message, Message.tool_result(end.id, "sunny"), tools=[WEATHER]))
    contents = wire.last.json()["contents"]
    assert contents[1]["parts"][1] == {"functionCall": {"name": "get_weather", "args": {"city": "NYC"}},
                                       "thoughtSignature": "sigFC"}
    assert contents[2]["parts"] == [{"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}}]


async def test_7_7_stream_thoughts_are_reasoning_events(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(W.stream_reply(W.response([W.thought("Considering options."), W.text("Done.")])))
    events = await collect(adapter, req(Message.user("q")))
    types = [e.type for e in events]
    assert types.index(StreamEventType.REASONING_START) < types.index(StreamEventType.REASONING_END)
    assert types.index(StreamEventType.REASONING_END) < types.index(StreamEventType.TEXT_START)
    assert "".join(e.reasoning_delta or "" for e in events) == "Considering options."
    final = events[-1].response
    assert final is not None and final.reasoning == "Considering options." and final.text == "Done."


async def test_bad_input_stream_without_finish_reason_is_a_stream_error(
    adapter: GeminiAdapter, wire: LoopbackServer
) -> None:
    body = W.response([W.text("never finished")], finish_reason=None)
    wire.push(W.stream_reply(body))
    seen: list[StreamEvent] = []
    with pytest.raises(E.StreamError, match="finishReason"):
        async for event in adapter.stream(req(Message.user("q"))):
            seen.append(event)
    assert any(e.type == StreamEventType.TEXT_DELTA for e in seen)


async def test_7_7_stream_cut_mid_way_is_a_stream_error(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(W.stream_reply(W.response([W.text("a long answer that is cut off")]), cut_after=2))
    with pytest.raises(E.StreamError):
        await collect(adapter, req(Message.user("q")))


async def test_7_7_error_chunk_inside_stream(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    frames = W.stream_frames(W.response([W.text("abcdefghijkl")]))[:1]
    frames.append(sse_frame(W.error_body(503, "The model is overloaded."), newline="\r\n"))
    wire.push(sse_reply(frames))
    with pytest.raises(E.ServerError, match="overloaded"):
        await collect(adapter, req(Message.user("q")))


async def test_bad_input_stream_chunk_not_json_is_a_stream_error(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(sse_reply([sse_frame("{broken", newline="\r\n")]))
    with pytest.raises(E.StreamError, match="not JSON"):
        await collect(adapter, req(Message.user("q")))


async def test_bad_input_unknown_stream_parts_pass_through(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    body = W.response([{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}}, W.text("ok")])
    wire.push(W.stream_reply(body))
    events = await collect(adapter, req(Message.user("q")))
    assert [e.raw for e in events if e.type == StreamEventType.PROVIDER_EVENT] == [
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}}
    ]
    final = events[-1].response
    assert final is not None and final.text == "ok" and [w.code for w in final.warnings] == ["unknown_content"]


async def test_history_tool_call_with_string_arguments_is_sent_as_object(
    adapter: GeminiAdapter, wire: LoopbackServer
) -> None:
    wire.push(W.response_reply(W.response([W.text("ok")])))
    good = ToolCallData(id="call_1", name="get_weather", arguments='{"city": "Lima"}')
    bad = ToolCallData(id="call_2", name="get_weather", arguments="{city: Lima")
    await adapter.complete(
        req(Message.user("q"), Message(Role.ASSISTANT, [ContentPart.of_tool_call(good), ContentPart.of_tool_call(bad)]))
    )
    parts = wire.last.json()["contents"][1]["parts"]
    assert parts[0]["functionCall"]["args"] == {"city": "Lima"}
    assert parts[1]["functionCall"]["args"] == {"_raw_arguments": "{city: Lima"}


async def test_6_5_quota_429_without_retry_info_is_quota_exceeded(adapter: GeminiAdapter, wire: LoopbackServer) -> None:
    wire.push(W.error_reply(429, "You exceeded your current quota, please check your plan and billing details."))
    with pytest.raises(E.QuotaExceededError) as info:
        await adapter.complete(req(Message.user("q")))
    assert info.value.retryable is False


_PARTS = st.one_of(
    st.builds(W.text, st.text(max_size=25), st.one_of(st.none(), st.text(min_size=1, max_size=10))),
    st.builds(W.thought, st.text(min_size=1, max_size=20)),
    st.builds(
        W.function_call,
        st.sampled_from(["get_weather", "run"]),
        st.dictionaries(st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=8)), max_size=3),
        st.one_of(st.none(), st.text(min_size=1, max_size=10)),
    ),
)


@given(st.lists(_PARTS, max_size=5), st.data())
@settings(max_examples=150, deadline=None)
def test_7_7_stream_split_anywhere_accumulates_to_the_same_content(
    parts: list[dict[str, object]], data: st.DataObject
) -> None:
    body = W.response(parts)  # type: ignore[arg-type]
    raw = b"".join(W.stream_frames(body))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    parser, state = SSEParser(), _StreamState(MODEL)
    events: list[StreamEvent] = []
    for start, end in itertools.pairwise([0, *cuts, len(raw)]):
        for sse in parser.feed(raw[start:end]):
            events.extend(state.on_chunk(json.loads(sse.data)))
    assert state.complete
    final, expected = state.finish_event([]).response, parse_response(body, model=MODEL)
    assert final is not None
    # Adjacent text parts arrive as one run of pieces, so compare what they say, not how they were split.
    assert final.text == expected.text and final.reasoning == expected.reasoning
    assert "".join(e.delta or "" for e in events if e.type == StreamEventType.TEXT_DELTA) == expected.text
    got = [(c.name, c.arguments, c.signature) for c in final.tool_calls]
    assert got == [(c.name, c.arguments, c.signature) for c in expected.tool_calls]
    assert final.finish_reason == expected.finish_reason
    ends = [e.tool_call.id for e in events if e.type == StreamEventType.TOOL_CALL_END and e.tool_call]
    assert ends == [c.id for c in final.tool_calls]


_KEYS = ["candidates", "content", "parts", "text", "thought", "thoughtSignature", "functionCall", "name", "args",
         "id", "finishReason", "usageMetadata", "promptFeedback", "blockReason", "inlineData", "mimeType", "data",
         "error", "code", "message", "status", "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount"]


_VALID_BODY = W.response([W.thought("t"), W.text("hi", thought_signature="s"), W.function_call("f", {"a": 1}, "sig")])


@given(st.one_of(mutated(W.stream_chunks(_VALID_BODY), _KEYS), st.lists(json_events(["x"], _KEYS), max_size=4)))
@settings(max_examples=60, deadline=None)
def test_bad_input_any_chunk_sequence_raises_only_sdk_or_malformed_errors(chunks: list[object]) -> None:
    """The adapter turns MALFORMED into StreamError; nothing else may escape the state machine."""
    state = _StreamState(MODEL)
    if not isinstance(chunks, list):
        return  # the root itself was replaced: not a sequence of chunks
    try:
        for chunk in chunks:
            if isinstance(chunk, dict):  # decode_json_event rejects non-objects first
                state.on_chunk(chunk)
        if state.complete:
            state.finish_event([])
    except (E.SDKError, *MALFORMED):
        pass


@given(st.one_of(mutated(_VALID_BODY, _KEYS), json_events(["x"], _KEYS)))
@settings(max_examples=80, deadline=None)
def test_bad_input_any_response_body_parses_or_raises_provider_error(body: object) -> None:
    if not isinstance(body, dict):
        return  # decode_json_body rejects non-objects before parsing
    try:
        parse_response(body, model=MODEL)
    except E.ProviderError:
        pass


async def test_7_8_stream_with_key_in_query_keeps_alt_sse(wire: LoopbackServer) -> None:
    adapter = GeminiAdapter(api_key="AIza-q", base_url=wire.base_url, key_in_query=True)
    wire.push(W.stream_reply(W.response([W.text("ok")])))
    try:
        events = await collect(adapter, req(Message.user("q")))
    finally:
        await adapter.close()
    assert wire.last.query == {"key": "AIza-q", "alt": "sse"} and "x-goog-api-key" not in wire.last.headers
    assert events[-1].response is not None and events[-1].response.text == "ok"


async def test_7_5_rate_limit_headers_reach_complete_and_stream_responses(
    adapter: GeminiAdapter, wire: LoopbackServer
) -> None:
    """A gateway in front of Gemini may send ``x-ratelimit-*``; both paths report it (§3.12)."""
    limits = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "59"}
    reply = W.response_reply(W.response([W.text("ok")]))
    reply.headers.update(limits)
    streamed = W.stream_reply(W.response([W.text("ok")]))
    streamed.headers.update(limits)
    wire.push(reply, streamed)
    resp = await adapter.complete(req(Message.user("q")))
    finish = (await collect(adapter, req(Message.user("q"))))[-1].response
    assert resp.rate_limit is not None and (resp.rate_limit.requests_limit, resp.rate_limit.requests_remaining) == (60, 59)
    assert finish is not None and finish.rate_limit == resp.rate_limit
