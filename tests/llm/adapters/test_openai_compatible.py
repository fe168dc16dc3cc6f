"""OpenAICompatibleAdapter against a real loopback HTTP server speaking Chat Completions (§7.10)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.llm import errors as E
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter, llama_cpp, ollama, vllm
from codeloop.llm.types import (
    ContentPart,
    DocumentData,
    ImageData,
    Message,
    Request,
    ResponseFormat,
    Role,
    StreamEventType,
    ToolCallData,
    ToolChoice,
    ToolDefinition,
)

from .wire_chat_completions import (
    chunk,
    completion,
    error_reply,
    sse_frame,
    sse_reply,
    text_stream_frames,
    tool_call,
    tool_stream_frames,
)
from .wire_loopback import LoopbackServer, json_reply, raw_reply


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer().start()
    yield srv
    srv.stop()


@pytest.fixture
async def adapter(server: LoopbackServer):  # type: ignore[no-untyped-def]
    server.reset()
    a = OpenAICompatibleAdapter(f"{server.base_url}/v1", api_key="sk-local", default_headers={"X-Test": "1"})
    yield a
    await a.close()


WEATHER = ToolDefinition(
    "get_weather", "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def simple(text: str = "Hi", **kw: object) -> Request:
    return Request(model="qwen", messages=[Message.user(text)], **kw)  # type: ignore[arg-type]


async def test_extra_body_goes_into_every_request_and_provider_options_win(server: LoopbackServer) -> None:
    server.reset()
    adapter = OpenAICompatibleAdapter(f"{server.base_url}/v1", extra_body={"cache_prompt": True, "seed": 1})
    try:
        server.push(json_reply(completion("a")))
        await adapter.complete(simple())
        assert server.last.json()["cache_prompt"] is True and server.last.json()["seed"] == 1
        server.push(json_reply(completion("b")))
        await adapter.complete(simple(provider_options={"openai_compatible": {"cache_prompt": False}}))
        assert server.last.json()["cache_prompt"] is False and server.last.json()["seed"] == 1
    finally:
        await adapter.close()


async def test_7_10_complete_request_body_field_by_field(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(json_reply(completion("Hello!")))
    messages = [
        Message.system("be brief"),
        Message.developer("use tools"),
        Message.user("weather in Paris?"),
        Message(Role.ASSISTANT, [ContentPart.of_text("checking"),
                                 ContentPart.of_tool_call(ToolCallData("call_1", "get_weather", {"city": "Paris"}))]),
        Message.tool_result("call_1", {"temp": 21}),
        Message.tool_result("call_2", "no such city", is_error=True),
    ]
    await adapter.complete(Request(
        model="qwen", messages=messages, tools=[WEATHER], tool_choice=ToolChoice.named("get_weather"),
        response_format=ResponseFormat("json_schema", {"type": "object"}, strict=True),
        temperature=0.0, top_p=0.9, max_tokens=64, stop_sequences=["END"],
        provider_options={"openai_compatible": {"seed": 42}, "anthropic": {"ignored": True}},
    ))
    rec = server.last
    assert rec.method == "POST" and rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == "Bearer sk-local"
    assert rec.headers["x-test"] == "1"
    assert rec.headers["content-type"] == "application/json"
    assert rec.json() == {
        "model": "qwen",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "system", "content": "use tools"},
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": "checking", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such city"},
        ],
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather for a city", "parameters": WEATHER.parameters}}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "response", "schema": {"type": "object"}, "strict": True}},
        "temperature": 0.0, "top_p": 0.9, "max_tokens": 64, "stop": ["END"], "seed": 42,
    }


async def test_7_10_complete_response_translation(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(json_reply(
        completion("Hello!", reasoning_content="thinking...", usage={
            "prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 4}, "completion_tokens_details": {"reasoning_tokens": 3}}),
        headers={"x-ratelimit-remaining-requests": "99", "x-ratelimit-limit-requests": "100"},
    ))
    resp = await adapter.complete(simple())
    assert resp.text == "Hello!"
    assert resp.reasoning == "thinking..."
    assert resp.id == "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"
    assert resp.model == "qwen2.5-coder-0.5b-instruct" and resp.provider == "openai_compatible"
    assert (resp.finish_reason.reason, resp.finish_reason.raw) == ("stop", "stop")
    u = resp.usage
    assert (u.input_tokens, u.output_tokens, u.total_tokens, u.cache_read_tokens, u.reasoning_tokens) == (19, 10, 29, 4, 3)
    assert resp.rate_limit is not None and resp.rate_limit.requests_remaining == 99
    assert resp.raw is not None and resp.raw["object"] == "chat.completion"


async def test_5_4_complete_tool_calls_parsed_and_bad_json_reported(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(json_reply(completion(None, finish_reason="tool_calls", tool_calls=[
        tool_call("call_a", "get_weather", '{"city": "Oslo"}'),
        tool_call("call_b", "get_weather", '{"city": '),
    ])))
    resp = await adapter.complete(simple(tools=[WEATHER]))
    assert resp.finish_reason.reason == "tool_calls"
    good, bad = resp.tool_calls
    assert (good.id, good.name, good.arguments) == ("call_a", "get_weather", {"city": "Oslo"})
    assert bad.arguments == {} and bad.raw_arguments == '{"city": ' and "not valid JSON" in (bad.parse_error or "")


async def test_3_8_tool_calls_with_stop_finish_become_tool_calls(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(json_reply(completion("", finish_reason="stop", tool_calls=[tool_call("c", "get_weather", "{}")])))
    resp = await adapter.complete(simple())
    assert (resp.finish_reason.reason, resp.finish_reason.raw) == ("tool_calls", "stop")


@pytest.mark.parametrize(
    ("status", "cls", "retryable"),
    [
        (400, E.InvalidRequestError, False),
        (401, E.AuthenticationError, False),
        (403, E.AccessDeniedError, False),
        (404, E.NotFoundError, False),
        (408, E.RequestTimeoutError, False),
        (413, E.ContextLengthError, False),
        (422, E.InvalidRequestError, False),
        (429, E.RateLimitError, True),
        (500, E.ServerError, True),
        (503, E.ServerError, True),
    ],
)
async def test_6_4_every_status_maps_to_its_error(
    server: LoopbackServer, adapter: OpenAICompatibleAdapter, status: int, cls: type[E.SDKError], retryable: bool
) -> None:
    headers = {"retry-after": "3"} if status == 429 else None
    server.push(error_reply(status, f"scripted failure {status}", headers))
    with pytest.raises(cls) as info:
        await adapter.complete(simple())
    err = info.value
    assert err.retryable is retryable
    assert f"scripted failure {status}" in err.message and f"HTTP {status}" in err.message
    if isinstance(err, E.ProviderError):
        assert err.status_code == status and err.raw is not None and err.raw["error"]["code"] == status
        assert err.retry_after == (3.0 if status == 429 else None)


async def test_6_5_context_length_message_on_400(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(error_reply(400, "the request exceeds the available context size, try increasing the context length"))
    with pytest.raises(E.ContextLengthError):
        await adapter.complete(simple())


async def test_malformed_json_body_is_a_provider_error(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(raw_reply(b'{"id": "x", "choices": [', status=200))
    with pytest.raises(E.ProviderError, match="not JSON"):
        await adapter.complete(simple())


async def test_error_body_that_is_not_json_keeps_the_text(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(raw_reply(b"<html>Bad Gateway</html>", status=502, content_type="text/html"))
    with pytest.raises(E.ServerError, match="Bad Gateway"):
        await adapter.complete(simple())


async def test_missing_choices_is_a_clear_provider_error(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(json_reply({"id": "x", "object": "chat.completion"}))
    with pytest.raises(E.ProviderError, match="without choices"):
        await adapter.complete(simple())


async def test_7_7_stream_text_events_and_usage(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(sse_reply(text_stream_frames(["Hel", "lo", " world"])))
    events = [e async for e in adapter.stream(simple())]
    body = server.last.json()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert server.last.headers["accept"] == "text/event-stream"
    types = [e.type for e in events]
    assert types == [
        StreamEventType.STREAM_START, StreamEventType.TEXT_START, StreamEventType.TEXT_DELTA,
        StreamEventType.TEXT_DELTA, StreamEventType.TEXT_DELTA, StreamEventType.TEXT_END, StreamEventType.FINISH,
    ]
    assert "".join(e.delta or "" for e in events if e.type == StreamEventType.TEXT_DELTA) == "Hello world"
    final = events[-1]
    assert final.response is not None and final.response.text == "Hello world"
    assert final.usage is not None and (final.usage.input_tokens, final.usage.output_tokens) == (12, 5)
    assert final.finish_reason is not None and final.finish_reason.reason == "stop"
    assert final.response.id == "chatcmpl-123"


async def test_7_7_stream_parallel_tool_calls_assembled_from_fragments(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(sse_reply(tool_stream_frames()))
    events = [e async for e in adapter.stream(simple(tools=[WEATHER]))]
    starts = [e.tool_call for e in events if e.type == StreamEventType.TOOL_CALL_START]
    ends = [e.tool_call for e in events if e.type == StreamEventType.TOOL_CALL_END]
    assert [(c.id, c.name) for c in starts if c] == [("call_abc", "read_file"), ("call_def", "list_dir")]
    assert [(c.id, c.arguments) for c in ends if c] == [("call_abc", {"path": "a.py"}), ("call_def", {"path": "."})]
    deltas = [e.delta for e in events if e.type == StreamEventType.TOOL_CALL_DELTA]
    assert deltas == ['{"pa', 'th": "a.py"}', '{"path": "."}']
    final = events[-1].response
    assert final is not None and final.finish_reason.reason == "tool_calls"
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("read_file", {"path": "a.py"}), ("list_dir", {"path": "."})]


async def test_7_7_stream_reasoning_content_before_text(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    frames = [
        sse_frame(chunk({"reasoning_content": "let me think"})),
        sse_frame(chunk({"content": "42"})),
        sse_frame(chunk({}, "stop")),
        sse_frame("[DONE]"),
    ]
    server.push(sse_reply(frames))
    events = [e async for e in adapter.stream(simple())]
    assert [e.type for e in events][1:4] == [
        StreamEventType.REASONING_START, StreamEventType.REASONING_DELTA, StreamEventType.REASONING_END]
    final = events[-1].response
    assert final is not None and final.reasoning == "let me think" and final.text == "42"


async def test_stream_cut_mid_way_is_a_stream_error(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(sse_reply(text_stream_frames(["a", "b", "c"]), cut_after=3))
    seen: list[str] = []
    with pytest.raises(E.StreamError):
        async for event in adapter.stream(simple()):
            seen.append(str(event.type))
    assert "text_delta" in seen  # data arrived before the cut


async def test_stream_ending_without_done_is_a_stream_error(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(sse_reply(text_stream_frames(["a"])[:-1]))
    with pytest.raises(E.StreamError, match=r"ended before its final event \(data: \[DONE\]\)"):
        _ = [e async for e in adapter.stream(simple())]


async def test_stream_event_that_is_not_json_is_a_stream_error(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(sse_reply([sse_frame(chunk({"content": "a"})), b"data: {not json\n\n", sse_frame("[DONE]")]))
    with pytest.raises(E.StreamError, match="not JSON"):
        _ = [e async for e in adapter.stream(simple())]


async def test_stream_in_band_error_event_is_mapped(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    err = {"error": {"code": 500, "message": "slot unavailable", "type": "server_error"}}
    server.push(sse_reply([sse_frame(chunk({"content": "a"})), sse_frame(err)]))
    with pytest.raises(E.ServerError, match="slot unavailable"):
        _ = [e async for e in adapter.stream(simple())]


async def test_stream_http_error_before_start_raises_mapped_error(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(error_reply(429, "busy", {"retry-after": "2"}))
    with pytest.raises(E.RateLimitError) as info:
        _ = [e async for e in adapter.stream(simple())]
    assert info.value.retry_after == 2.0


async def test_connection_refused_is_a_network_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    adapter = OpenAICompatibleAdapter(f"http://127.0.0.1:{port}/v1")
    try:
        with pytest.raises(E.NetworkError) as info:
            await adapter.complete(simple())
        assert info.value.retryable
    finally:
        await adapter.close()


async def test_3_5_image_parts_become_data_urls(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    server.push(json_reply(completion("a cat")))
    msg = Message(Role.USER, [ContentPart.of_text("what is this?"),
                              ContentPart.of_image(ImageData(data=b"\x89PNG", detail="low"))])
    await adapter.complete(Request(model="m", messages=[msg]))
    assert server.last.json()["messages"][0]["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw==", "detail": "low"}},
    ]


async def test_8_3_image_from_local_file_path_and_url(
    server: LoopbackServer, adapter: OpenAICompatibleAdapter, tmp_path: Path
) -> None:
    shot = tmp_path / "shot.jpg"
    shot.write_bytes(b"\xff\xd8\xff")
    server.push(json_reply(completion("ok")))
    msg = Message(Role.USER, [ContentPart.of_image(ImageData(url=str(shot))),
                              ContentPart.of_image(ImageData(url="https://example.com/a.png"))])
    await adapter.complete(Request(model="m", messages=[msg]))
    assert server.last.json()["messages"][0]["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
    ]


async def test_unreadable_local_image_is_a_configuration_error(adapter: OpenAICompatibleAdapter, tmp_path: Path) -> None:
    msg = Message(Role.USER, [ContentPart.of_image(ImageData(url=str(tmp_path / "missing.png")))])
    with pytest.raises(E.ConfigurationError, match=r"missing\.png"):
        await adapter.complete(Request(model="m", messages=[msg]))


async def test_unsendable_content_kind_is_an_invalid_request_before_any_http(server: LoopbackServer, adapter: OpenAICompatibleAdapter) -> None:
    msg = Message(Role.USER, [ContentPart(kind="document", document=DocumentData(data=b"%PDF"))])
    with pytest.raises(E.InvalidRequestError, match="content kind 'document'"):
        await adapter.complete(Request(model="m", messages=[msg]))
    with pytest.raises(E.InvalidRequestError, match="'x-custom'"):
        await adapter.complete(Request(model="m", messages=[Message(Role.USER, [ContentPart(kind="x-custom")])]))
    assert server.requests == []


async def test_presets_are_thin_configs() -> None:
    adapters = [llama_cpp(), ollama(), vllm(api_key="k")]
    assert [(a.name, a.base_url) for a in adapters] == [
        ("llama_cpp", "http://127.0.0.1:8080/v1"),
        ("ollama", "http://127.0.0.1:11434/v1"),
        ("vllm", "http://127.0.0.1:8000/v1"),
    ]
    assert all(a.supports_tool_choice(m) for a in adapters for m in ("auto", "none", "required", "named"))
    for a in adapters:
        await a.close()


def test_sync_wrapper_can_reuse_the_adapter_across_event_loops(server: LoopbackServer) -> None:
    from codeloop.llm.client import Client
    from codeloop.llm.generate import generate_sync

    server.reset()
    server.push(json_reply(completion("one")), json_reply(completion("two")))
    client = Client({"local": OpenAICompatibleAdapter(f"{server.base_url}/v1")})
    assert generate_sync("m", "a", client=client).text == "one"
    assert generate_sync("m", "b", client=client).text == "two"  # a second asyncio.run, new loop
