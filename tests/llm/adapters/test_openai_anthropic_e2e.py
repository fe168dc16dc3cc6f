"""AnthropicAdapter (``/v1/messages``) and OpenAIAdapter (``/v1/responses``) against the
real llama.cpp server (e2e).

These check wire behaviour (status, shapes, usage, streaming, tool-result round trip), not
what the model decides: temperature 0, a few output tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from codeloop.llm.adapters.anthropic import AnthropicAdapter
from codeloop.llm.adapters.openai import OpenAIAdapter
from codeloop.llm.types import (
    ContentPart,
    Message,
    Request,
    Role,
    StreamEventType,
    ToolCallData,
    ToolDefinition,
    Usage,
)

from ..conftest import LocalLLM

pytestmark = pytest.mark.e2e

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


Adapter = AnthropicAdapter | OpenAIAdapter
MODEL = "qwen2.5-coder-0.5b-instruct"  # llama-server serves one model whatever the id says


@pytest.fixture(params=[AnthropicAdapter, OpenAIAdapter], ids=["anthropic", "openai-responses"])
async def adapter(request: pytest.FixtureRequest, local_llm: LocalLLM) -> AsyncIterator[Adapter]:
    # Both wires live under /v1 on llama-server: /v1/messages and /v1/responses.
    a = request.param(api_key="local", base_url=local_llm.base_url, timeout=local_llm.timeout)
    yield a
    await a.close()


def ask(*messages: Message, **kw: object) -> Request:
    return Request(model=MODEL, messages=list(messages), temperature=0.0,
                   max_tokens=8, **kw)  # type: ignore[arg-type]


def prompt_tokens(adapter: Adapter, usage: Usage) -> int:
    """Every token of the prompt, whether the server evaluated it or read it from its cache."""
    if isinstance(adapter, AnthropicAdapter):
        return usage.input_tokens + (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
    return usage.input_tokens


def tool_history(result: str) -> list[Message]:
    call = ToolCallData(id="toolu_e2e_1", name="get_weather", arguments={"city": "Paris"})
    return [
        Message.system("Answer in one short sentence."),
        Message.user("What is the weather in Paris?"),
        Message(Role.ASSISTANT, [ContentPart.of_tool_call(call)]),
        Message.tool_result("toolu_e2e_1", result, name="get_weather"),
    ]


async def test_e2e_complete_text_with_usage(adapter: Adapter) -> None:
    resp = await adapter.complete(ask(Message.system("Be brief."), Message.user("Say hello.")))
    assert resp.provider == adapter.name and resp.id
    assert resp.message.role == Role.ASSISTANT and resp.text
    assert resp.finish_reason.reason in ("stop", "length")
    assert resp.usage.input_tokens > 0 and resp.usage.output_tokens > 0
    assert resp.usage.total_tokens == resp.usage.input_tokens + resp.usage.output_tokens


async def test_e2e_stream_text_deltas_build_the_final_text(adapter: Adapter) -> None:
    events = [e async for e in adapter.stream(ask(Message.user("Say hello.")))]
    assert events[0].type == StreamEventType.STREAM_START
    assert events[-1].type == StreamEventType.FINISH
    final = events[-1].response
    assert final is not None and final.text
    assert "".join(e.delta or "" for e in events if e.type == StreamEventType.TEXT_DELTA) == final.text
    assert events[-1].usage is not None and events[-1].usage.input_tokens > 0 and events[-1].usage.output_tokens > 0


async def test_e2e_tool_result_round_trip_complete_and_stream(adapter: Adapter) -> None:
    short = await adapter.complete(ask(*tool_history("18C"), tools=[WEATHER]))
    assert short.finish_reason.reason in ("stop", "length", "tool_calls")
    events = [
        e async for e in adapter.stream(
            ask(*tool_history("18C, sunny, light wind from the west, humidity 40 percent"), tools=[WEATHER])
        )
    ]
    assert events[0].type == StreamEventType.STREAM_START and events[-1].type == StreamEventType.FINISH
    longer = events[-1].usage
    assert longer is not None and longer.output_tokens > 0
    # The tool result is part of the prompt: a longer result makes a longer prompt. The server
    # keeps its prompt cache, so part of the second prompt may be read from the cache; Anthropic's
    # wire counts those tokens apart from input_tokens, OpenAI's counts them inside it.
    assert prompt_tokens(adapter, longer) > prompt_tokens(adapter, short.usage) > 0
