"""OpenAICompatibleAdapter against the real llama.cpp server with the 0.5B model (issue 3, e2e).

These check wire behaviour (status, shapes, usage, streaming, tool-result round trips),
never what the model decides, so they are deterministic. Prompts and max_tokens are tiny:
the server shares 2 cores with everything else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from codeloop.llm import errors as E
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.types import (
    ContentPart,
    Message,
    Request,
    Role,
    StreamEventType,
    ToolCallData,
    ToolDefinition,
)

from ..conftest import LocalLLM

pytestmark = pytest.mark.e2e

WEATHER = ToolDefinition(
    "get_weather", "Get the weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
FINISHES = {"stop", "length", "tool_calls"}


@pytest.fixture
async def adapter(local_llm: LocalLLM) -> AsyncIterator[OpenAICompatibleAdapter]:
    a = OpenAICompatibleAdapter(local_llm.base_url, name="llama_cpp", timeout=local_llm.timeout)
    yield a
    await a.close()


def tool_round_trip() -> list[Message]:
    return [
        Message.user("What is the weather in Paris?"),
        Message(Role.ASSISTANT, [ContentPart.of_tool_call(ToolCallData("call_1", "get_weather", {"city": "Paris"}))]),
        Message.tool_result("call_1", "22C and sunny", name="get_weather"),
    ]


async def test_e2e_complete_text_with_usage(adapter: OpenAICompatibleAdapter, local_llm: LocalLLM) -> None:
    resp = await adapter.complete(Request(
        model=local_llm.model, messages=[Message.system("Answer briefly."), Message.user("Say hello.")],
        temperature=0.0, max_tokens=8,
    ))
    assert resp.provider == "llama_cpp" and resp.id.startswith("chatcmpl")
    assert resp.text.strip() != ""
    assert resp.finish_reason.reason in {"stop", "length"} and resp.finish_reason.raw in {"stop", "length"}
    u = resp.usage
    assert u.input_tokens > 0 and 0 < u.output_tokens <= 8 and u.total_tokens == u.input_tokens + u.output_tokens


async def test_e2e_stream_text_events_and_usage(adapter: OpenAICompatibleAdapter, local_llm: LocalLLM) -> None:
    events = [e async for e in adapter.stream(Request(
        model=local_llm.model, messages=[Message.user("Count from 1 to 3.")], temperature=0.0, max_tokens=8,
    ))]
    assert events[0].type == StreamEventType.STREAM_START and events[-1].type == StreamEventType.FINISH
    deltas = "".join(e.delta or "" for e in events if e.type == StreamEventType.TEXT_DELTA)
    final = events[-1].response
    assert final is not None and deltas != "" and final.text == deltas
    assert events[-1].usage is not None and events[-1].usage.output_tokens > 0 and events[-1].usage.input_tokens > 0
    types = [e.type for e in events]
    assert types.index(StreamEventType.TEXT_START) < types.index(StreamEventType.TEXT_DELTA) < types.index(
        StreamEventType.TEXT_END)


async def test_e2e_same_request_same_output_at_temperature_0(adapter: OpenAICompatibleAdapter, local_llm: LocalLLM) -> None:
    req = Request(model=local_llm.model, messages=[Message.user("Name a color.")], temperature=0.0, max_tokens=6)
    first, second = await adapter.complete(req), await adapter.complete(req)
    assert first.text == second.text


async def test_e2e_tool_result_round_trip_complete(adapter: OpenAICompatibleAdapter, local_llm: LocalLLM) -> None:
    resp = await adapter.complete(Request(
        model=local_llm.model, messages=tool_round_trip(), tools=[WEATHER], temperature=0.0, max_tokens=12,
    ))
    assert resp.finish_reason.reason in FINISHES
    assert resp.usage.input_tokens > 50  # the tool definition and the tool turn were rendered into the prompt
    assert resp.text != "" or resp.tool_calls


async def test_e2e_tool_result_round_trip_stream(adapter: OpenAICompatibleAdapter, local_llm: LocalLLM) -> None:
    events = [e async for e in adapter.stream(Request(
        model=local_llm.model, messages=tool_round_trip(), tools=[WEATHER], temperature=0.0, max_tokens=12,
    ))]
    final = events[-1]
    assert final.type == StreamEventType.FINISH and final.response is not None
    assert final.finish_reason is not None and final.finish_reason.reason in FINISHES
    assert final.usage is not None and final.usage.input_tokens > 50


async def test_e2e_server_rejection_maps_to_invalid_request(adapter: OpenAICompatibleAdapter, local_llm: LocalLLM) -> None:
    with pytest.raises(E.InvalidRequestError, match="max_tokens") as info:
        await adapter.complete(Request(
            model=local_llm.model, messages=[Message.user("hi")],
            provider_options={"llama_cpp": {"max_tokens": "not a number"}},
        ))
    assert info.value.status_code == 400 and not info.value.retryable


@pytest.mark.e2e_slow
async def test_e2e_slow_prefilled_tool_call_comes_back_structured(local_llm_15b: LocalLLM) -> None:
    """Issue 3 fact: pre-filling ``<tool_call>\\n{"name": "`` makes llama-server return a structured call."""
    adapter = OpenAICompatibleAdapter(local_llm_15b.base_url, name="llama_cpp", timeout=local_llm_15b.timeout)
    try:
        resp = await adapter.complete(Request(
            model=local_llm_15b.model,
            messages=[Message.user("What's the weather in Paris?"), Message.assistant('<tool_call>\n{"name": "')],
            tools=[WEATHER], temperature=0.0, max_tokens=40,
        ))
    finally:
        await adapter.close()
    assert resp.finish_reason.reason == "tool_calls"
    assert [(c.name, c.arguments) for c in resp.tool_calls] == [("get_weather", {"city": "Paris"})]


async def test_e2e_cache_prompt_reuses_the_prefix_the_server_already_read(local_llm: LocalLLM) -> None:
    # `cache_prompt` in the body (what the embedded default of `codeloop run` sends) reuses the
    # prefix; `"cache_prompt": false` (what a caller needing run-to-run identical outputs sends,
    # now that the server starts with the cache on, issue 33) rereads it. The server reports
    # the reused tokens as usage.prompt_tokens_details.cached_tokens.
    prompt = [Message.system("Answer briefly."), Message.user("List three colours. " * 20)]
    cached = OpenAICompatibleAdapter(local_llm.base_url, name="llama_cpp", timeout=local_llm.timeout,
                                     extra_body={"cache_prompt": True})
    plain = OpenAICompatibleAdapter(local_llm.base_url, name="llama_cpp", timeout=local_llm.timeout,
                                    extra_body={"cache_prompt": False})
    try:
        request = Request(model=local_llm.model, messages=prompt, temperature=0.0, max_tokens=2)
        await cached.complete(request)
        again = await cached.complete(request)
        without = await plain.complete(request)
    finally:
        await cached.close()
        await plain.close()
    assert again.usage.input_tokens > 60
    assert (again.usage.cache_read_tokens or 0) >= again.usage.input_tokens - 2
    assert (without.usage.cache_read_tokens or 0) == 0
