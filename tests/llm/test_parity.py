"""Cross-provider parity (unified-llm spec §8.9): the same high-level calls through every adapter.

Each row runs generate()/stream()/generate_object() with the real adapter against a loopback
server speaking that provider's wire format (shapes from tests/llm/adapters/wire_*.py, which
cite the providers' API references). What is asserted is provider-independent: the same
tool loop, the same results in call order, the same retries, the same usage totals.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from codeloop.llm.adapters.anthropic import AnthropicAdapter
from codeloop.llm.adapters.base import ProviderAdapter
from codeloop.llm.adapters.gemini import GeminiAdapter
from codeloop.llm.adapters.openai import OpenAIAdapter
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.client import Client
from codeloop.llm.errors import AuthenticationError
from codeloop.llm.generate import generate, stream
from codeloop.llm.retry import RetryPolicy
from codeloop.llm.structured import generate_object
from codeloop.llm.tool import Tool
from codeloop.llm.types import StreamEventType

from .adapters import wire_anthropic as an
from .adapters import wire_chat_completions as cc
from .adapters import wire_gemini as ge
from .adapters import wire_openai_responses as oa
from .adapters.wire_loopback import LoopbackServer, Reply, json_reply, sse_reply

Call = tuple[str, str, dict[str, Any]]  # (id, name, arguments)


@dataclass(frozen=True)
class Wire:
    name: str
    adapter: Callable[[str], ProviderAdapter]
    text: Callable[[str, bool], Reply]
    tools: Callable[[list[Call], bool], Reply]
    error: Callable[[int, str, dict[str, str] | None], Reply]


def _oa_text(text: str, streamed: bool) -> Reply:
    body = oa.response([oa.output_message(text)], usage_=oa.usage(10, 5))
    return oa.stream_reply(body) if streamed else oa.response_reply(body)


def _oa_tools(calls: list[Call], streamed: bool) -> Reply:
    body = oa.response([oa.function_call(i, n, json.dumps(a)) for i, n, a in calls], usage_=oa.usage(10, 5))
    return oa.stream_reply(body) if streamed else oa.response_reply(body)


def _an_text(text: str, streamed: bool) -> Reply:
    body = an.message([an.text(text)], usage_=an.usage(10, 5))
    return an.stream_reply(body) if streamed else an.message_reply(body)


def _an_tools(calls: list[Call], streamed: bool) -> Reply:
    body = an.message([an.tool_use(i, n, a) for i, n, a in calls], stop_reason="tool_use", usage_=an.usage(10, 5))
    return an.stream_reply(body) if streamed else an.message_reply(body)


def _ge_text(text: str, streamed: bool) -> Reply:
    body = ge.response([ge.text(text)], usage_=ge.usage(10, 5))
    return ge.stream_reply(body) if streamed else ge.response_reply(body)


def _ge_tools(calls: list[Call], streamed: bool) -> Reply:
    body = ge.response([ge.function_call(n, a) for _i, n, a in calls], usage_=ge.usage(10, 5))
    return ge.stream_reply(body) if streamed else ge.response_reply(body)


def _cc_usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _cc_text(text: str, streamed: bool) -> Reply:
    if streamed:
        return sse_reply(cc.text_stream_frames([text[:3], text[3:]]))
    return json_reply(cc.completion(text, usage=_cc_usage()))


def _cc_tools(calls: list[Call], streamed: bool) -> Reply:
    if streamed:
        frames = [cc.sse_frame(cc.chunk({"tool_calls": [
            {"index": k, "id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}]}))
            for k, (i, n, a) in enumerate(calls)]
        frames += [cc.sse_frame(cc.chunk({}, "tool_calls")), cc.sse_frame(cc.usage_chunk(10, 5)), cc.sse_frame("[DONE]")]
        return sse_reply(frames)
    return json_reply(cc.completion(None, finish_reason="tool_calls", usage=_cc_usage(),
                                    tool_calls=[cc.tool_call(i, n, json.dumps(a)) for i, n, a in calls]))


WIRES = [
    Wire("openai", lambda url: OpenAIAdapter("sk-test", base_url=url + "/v1"), _oa_text, _oa_tools,
         lambda s, m, h: oa.error_reply(s, m, h)),
    Wire("anthropic", lambda url: AnthropicAdapter("sk-ant-test", base_url=url), _an_text, _an_tools,
         lambda s, m, h: an.error_reply(s, m, h)),
    Wire("gemini", lambda url: GeminiAdapter("g-test", base_url=url + "/v1beta"), _ge_text, _ge_tools,
         lambda s, m, h: ge.error_reply(s, m, h)),
    Wire("openai_compatible", lambda url: OpenAICompatibleAdapter(url + "/v1"), _cc_text, _cc_tools,
         lambda s, m, h: cc.error_reply(s, m, h)),
]


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer().start()
    yield srv
    srv.stop()


@pytest.fixture(params=WIRES, ids=[w.name for w in WIRES])
async def setup(request: pytest.FixtureRequest, server: LoopbackServer) -> AsyncIterator[tuple[Wire, Client]]:
    server.reset()
    wire: Wire = request.param
    client = Client({wire.name: wire.adapter(server.base_url)})
    yield wire, client
    await client.close()


def weather(log: list[str]) -> Tool:
    async def get_weather(city: str) -> str:
        log.append(city)
        return f"{city}: 21C"

    return Tool("get_weather", "Weather for a city",
                {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, get_weather)


def sent_text(server: LoopbackServer, index: int) -> str:
    return server.requests[index].body.decode()


async def test_8_9_simple_text_and_usage(setup: tuple[Wire, Client], server: LoopbackServer) -> None:
    wire, client = setup
    server.push(wire.text("Hello there", False))
    result = await generate("m", "Say hello", client=client)
    assert result.text == "Hello there" and result.finish_reason.reason == "stop"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 5)


async def test_8_9_streaming_text_deltas_concatenate_to_response(setup: tuple[Wire, Client], server: LoopbackServer) -> None:
    wire, client = setup
    server.push(wire.text("Streaming works", True))
    result = stream("m", "go", client=client)
    assert "".join([d async for d in result.text_stream]) == "Streaming works" == result.response().text


async def test_8_9_parallel_tool_calls_executed_and_sent_back_together(setup: tuple[Wire, Client], server: LoopbackServer) -> None:
    wire, client = setup
    log: list[str] = []
    server.push(wire.tools([("call_sf", "get_weather", {"city": "San Francisco"}),
                            ("call_ny", "get_weather", {"city": "New York"})], False),
                wire.text("SF and NY are both 21C", False))
    result = await generate("m", "weather?", tools=[weather(log)], client=client)
    assert sorted(log) == ["New York", "San Francisco"]
    assert [r.content for r in result.steps[0].tool_results] == ["San Francisco: 21C", "New York: 21C"]
    assert len(server.requests) == 2
    second = sent_text(server, 1)
    assert second.index("San Francisco: 21C") < second.index("New York: 21C")
    assert result.text == "SF and NY are both 21C"
    assert result.total_usage.input_tokens == 20


async def test_8_9_multi_step_tool_loop_three_rounds(setup: tuple[Wire, Client], server: LoopbackServer) -> None:
    wire, client = setup
    log: list[str] = []
    for n in range(3):
        server.push(wire.tools([(f"call_{n}", "get_weather", {"city": f"C{n}"})], False))
    server.push(wire.text("done", False))
    result = await generate("m", "go", tools=[weather(log)], max_tool_rounds=3, client=client)
    assert log == ["C0", "C1", "C2"] and len(result.steps) == 4 and result.text == "done"
    assert all(f"C{n}: 21C" in sent_text(server, 3) for n in range(3))  # the whole history is resent


async def test_8_9_streaming_with_tool_calls(setup: tuple[Wire, Client], server: LoopbackServer) -> None:
    wire, client = setup
    log: list[str] = []
    server.push(wire.tools([("call_1", "get_weather", {"city": "Oslo"})], True), wire.text("Cold.", True))
    result = stream("m", "go", tools=[weather(log)], client=client)
    types = [e.type async for e in result]
    assert log == ["Oslo"] and StreamEventType.STEP_FINISH in types and StreamEventType.TOOL_CALL_END in types
    assert result.response().text == "Cold."


async def test_8_9_structured_output(setup: tuple[Wire, Client], server: LoopbackServer) -> None:
    wire, client = setup
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
              "required": ["name", "age"]}
    server.push(wire.text('{"name": "Alice", "age": 30}', False))
    result = await generate_object("m", "Alice is 30", schema=schema, client=client)
    assert result.output == {"name": "Alice", "age": 30}
    assert "integer" in sent_text(server, 0)  # the schema reached the provider, natively or as an instruction


async def test_8_9_invalid_key_401_is_not_retried(setup: tuple[Wire, Client], server: LoopbackServer) -> None:
    wire, client = setup
    server.push(wire.error(401, "invalid api key", None), wire.text("never", False))
    with pytest.raises(AuthenticationError):
        await generate("m", "go", client=client, retry_policy=RetryPolicy(base_delay=0, jitter=False))
    assert len(server.requests) == 1


async def test_8_9_rate_limit_429_is_retried_transparently(setup: tuple[Wire, Client], server: LoopbackServer) -> None:
    wire, client = setup
    server.push(wire.error(429, "slow down", {"retry-after": "0"}), wire.text("ok after retry", False))
    result = await generate("m", "go", client=client, retry_policy=RetryPolicy(base_delay=0, jitter=False))
    assert result.text == "ok after retry" and len(server.requests) == 2
