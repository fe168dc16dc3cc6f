"""High-level generate()/stream() and the tool loop (unified-llm spec §4.3–4.4, §4.7, §5.6–5.8)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from codeloop.llm.abort import AbortController
from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response, tool_call_response
from codeloop.llm.client import Client
from codeloop.llm.errors import (
    AbortError,
    AuthenticationError,
    ConfigurationError,
    RateLimitError,
    RequestTimeoutError,
    ServerError,
)
from codeloop.llm.generate import TimeoutConfig, generate, generate_sync, stream
from codeloop.llm.retry import RetryPolicy
from codeloop.llm.tool import Tool
from codeloop.llm.types import ContentKind, Message, Request, Response, Role, StreamEventType, Usage

FAST = RetryPolicy(base_delay=0.0, jitter=False)
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def setup(*script: Any) -> tuple[Client, ScriptedAdapter]:
    adapter = ScriptedAdapter(script)
    return Client({"scripted": adapter}), adapter


def weather_tool(log: list[str] | None = None) -> Tool:
    async def get_weather(city: str) -> str:
        if log is not None:
            log.append(city)
        return f"sunny in {city}"

    return Tool("get_weather", "Weather", SCHEMA, get_weather)


async def test_4_3_prompt_and_system_become_messages() -> None:
    client, adapter = setup(text_response("4"))
    result = await generate("m", "2+2?", system="be terse", client=client, temperature=0.0, max_tokens=5)
    assert result.text == "4"
    req = adapter.requests[0]
    assert [(m.role, m.text) for m in req.messages] == [(Role.SYSTEM, "be terse"), (Role.USER, "2+2?")]
    assert (req.model, req.temperature, req.max_tokens) == ("m", 0.0, 5)


async def test_4_3_prompt_and_messages_together_is_an_error() -> None:
    client, _ = setup()
    with pytest.raises(ConfigurationError, match="not both"):
        await generate("m", "x", messages=[Message.user("y")], client=client)
    with pytest.raises(ConfigurationError, match="prompt"):
        await generate("m", client=client)


async def test_5_6_tool_loop_executes_and_feeds_results_back() -> None:
    log: list[str] = []
    client, adapter = setup(
        tool_call_response(("get_weather", {"city": "Paris"}, "call_1"), usage=Usage(10, 5, 15)),
        text_response("It is sunny.", usage=Usage(20, 3, 23, reasoning_tokens=2)),
    )
    result = await generate("m", "weather?", tools=[weather_tool(log)], client=client)
    assert log == ["Paris"]
    assert result.text == "It is sunny."
    assert len(result.steps) == 2
    assert result.steps[0].tool_results[0].content == "sunny in Paris"
    assert result.total_usage == Usage(30, 8, 38, reasoning_tokens=2)
    assert result.usage == Usage(20, 3, 23, reasoning_tokens=2)
    second = adapter.requests[1].messages
    assert second[-2].role == Role.ASSISTANT and second[-2].content[0].kind == ContentKind.TOOL_CALL
    assert second[-1].role == Role.TOOL and second[-1].tool_call_id == "call_1"
    assert adapter.requests[0].tools is not None and adapter.requests[0].tools[0].name == "get_weather"


async def test_5_7_parallel_calls_run_concurrently_results_in_call_order() -> None:
    started: list[str] = []
    release = asyncio.Event()

    async def slow(name: str, delay: float) -> str:
        started.append(name)
        if len(started) == 3:
            release.set()
        await asyncio.wait_for(release.wait(), 5)  # only passes if all three run at once
        await asyncio.sleep(delay)
        return name

    tool = Tool("slow", "s", {"type": "object", "properties": {"name": {"type": "string"},
                                                                 "delay": {"type": "number"}}}, slow)
    client, adapter = setup(
        tool_call_response(("slow", {"name": "a", "delay": 0.05}, "c1"), ("slow", {"name": "b", "delay": 0.0}, "c2"),
                           ("slow", {"name": "c", "delay": 0.02}, "c3")),
        text_response("done"),
    )
    result = await generate("m", "go", tools=[tool], client=client)
    assert [r.content for r in result.steps[0].tool_results] == ["a", "b", "c"]
    tool_msgs = adapter.requests[1].messages[-3:]
    assert [m.tool_call_id for m in tool_msgs] == ["c1", "c2", "c3"]
    assert len(adapter.requests) == 2  # one continuation request for all results


async def test_5_7_partial_failures_unknown_tools_and_bad_arguments_become_error_results() -> None:
    def boom(city: str) -> str:
        raise RuntimeError("weather service down")

    tools = [Tool("get_weather", "w", SCHEMA, boom), weather_tool()]
    tools = [tools[0], Tool("ok_weather", "w", SCHEMA, tools[1].execute)]
    client, _ = setup(
        tool_call_response(
            ("get_weather", {"city": "Oslo"}, "c1"),
            ("ok_weather", {"city": "Rome"}, "c2"),
            ("nope", {}, "c3"),
            ("ok_weather", '{"city": ', "c4"),
            ("ok_weather", {"town": "Rome"}, "c5"),
        ),
        text_response("recovered"),
    )
    result = await generate("m", "go", tools=tools, client=client)
    r = result.steps[0].tool_results
    assert [x.is_error for x in r] == [True, False, True, True, True]
    assert "weather service down" in str(r[0].content)
    assert r[1].content == "sunny in Rome"
    assert "Unknown tool: 'nope'" in str(r[2].content)
    assert "not valid JSON" in str(r[3].content)
    assert "'city' is a required property" in str(r[4].content)
    assert result.text == "recovered"


async def test_5_8_repair_hook_can_fix_arguments() -> None:
    client, _ = setup(tool_call_response(("get_weather", {"town": "Rome"}, "c1")), text_response("ok"))

    def repair(call: Any, problem: str) -> dict[str, Any]:
        return {"city": call.arguments["town"]}

    result = await generate("m", "go", tools=[weather_tool()], client=client, repair_tool_call=repair)
    assert result.steps[0].tool_results[0].content == "sunny in Rome"


async def test_5_2_context_injection() -> None:
    seen: dict[str, Any] = {}

    def handler(city: str, tool_call_id: str, messages: list[Message]) -> str:
        seen.update(id=tool_call_id, n=len(messages))
        return "x"

    client, _ = setup(tool_call_response(("w", {"city": "A"}, "call_9")), text_response("ok"))
    await generate("m", "go", tools=[Tool("w", "w", SCHEMA, handler)], client=client)
    assert seen == {"id": "call_9", "n": 1}


async def test_4_3_max_tool_rounds_bounds_llm_calls() -> None:
    calls = [tool_call_response(("get_weather", {"city": str(i)})) for i in range(5)]
    client, adapter = setup(*calls)
    result = await generate("m", "go", tools=[weather_tool()], max_tool_rounds=2, client=client)
    assert len(adapter.requests) == 3
    assert [len(s.tool_results) for s in result.steps] == [1, 1, 0]
    assert result.finish_reason.reason == "tool_calls" and len(result.tool_calls) == 1


async def test_4_3_max_tool_rounds_zero_returns_calls_unexecuted() -> None:
    log: list[str] = []
    client, adapter = setup(tool_call_response(("get_weather", {"city": "X"})))
    result = await generate("m", "go", tools=[weather_tool(log)], max_tool_rounds=0, client=client)
    assert log == [] and len(adapter.requests) == 1 and result.tool_calls[0].name == "get_weather"


async def test_5_5_passive_tools_are_returned_to_the_caller() -> None:
    client, adapter = setup(tool_call_response(("approve", {"city": "X"})))
    result = await generate("m", "go", tools=[Tool("approve", "needs a human", SCHEMA)], client=client)
    assert len(adapter.requests) == 1 and result.tool_calls[0].name == "approve" and result.tool_results == []


async def test_5_6_stop_when_ends_the_loop() -> None:
    client, adapter = setup(*[tool_call_response(("get_weather", {"city": "X"})) for _ in range(3)])
    result = await generate("m", "go", tools=[weather_tool()], max_tool_rounds=5, client=client,
                            stop_when=lambda steps: len(steps) >= 2)
    assert len(result.steps) == 2 and len(adapter.requests) == 2


async def test_6_6_generate_retries_each_call() -> None:
    client, adapter = setup(ServerError("500", provider="s"), RateLimitError("429", provider="s", retry_after=0.0),
                            text_response("ok"))
    result = await generate("m", "go", client=client, retry_policy=FAST)
    assert result.text == "ok" and len(adapter.requests) == 3


async def test_6_6_generate_does_not_retry_auth_errors_or_past_max_retries() -> None:
    client, adapter = setup(AuthenticationError("bad", provider="s"))
    with pytest.raises(AuthenticationError):
        await generate("m", "go", client=client, retry_policy=FAST)
    client, adapter = setup(ServerError("1", provider="s"), ServerError("2", provider="s"))
    with pytest.raises(ServerError):
        await generate("m", "go", client=client, max_retries=1, retry_policy=RetryPolicy(max_retries=1, base_delay=0))
    assert len(adapter.requests) == 2


async def test_4_7_abort_signal_cancels_a_running_call() -> None:
    controller = AbortController()

    async def hang(request: Request) -> Response:
        await asyncio.sleep(30)
        raise AssertionError("not reached")

    client, _ = setup(hang)
    asyncio.get_running_loop().call_later(0.05, controller.abort, "user pressed ctrl-c")
    started = time.monotonic()
    with pytest.raises(AbortError, match="user pressed ctrl-c"):
        await generate("m", "go", client=client, abort_signal=controller.signal)
    assert time.monotonic() - started < 5


async def test_4_7_already_aborted_signal_makes_no_call() -> None:
    controller = AbortController()
    controller.abort()
    client, adapter = setup(text_response("x"))
    with pytest.raises(AbortError):
        await generate("m", "go", client=client, abort_signal=controller.signal)
    assert adapter.requests == []


async def test_4_7_total_timeout() -> None:
    async def hang(request: Request) -> Response:
        await asyncio.sleep(30)
        raise AssertionError("not reached")

    client, _ = setup(hang)
    with pytest.raises(RequestTimeoutError, match="within"):
        await generate("m", "go", client=client, timeout=0.05)
    client, _ = setup(hang)
    with pytest.raises(RequestTimeoutError):
        await generate("m", "go", client=client, timeout=TimeoutConfig(per_step=0.05))


async def test_4_4_stream_spans_steps_with_step_finish() -> None:
    client, _ = setup(tool_call_response(("get_weather", {"city": "Paris"}, "c1")), text_response("Sunny!"))
    result = stream("m", "weather?", tools=[weather_tool()], client=client)
    types = [e.type async for e in result]
    assert types.count(StreamEventType.STEP_FINISH) == 1
    assert types.count(StreamEventType.FINISH) == 2
    assert types.index(StreamEventType.TOOL_CALL_END) < types.index(StreamEventType.STEP_FINISH)
    assert result.response().text == "Sunny!"
    assert len(result.result().steps) == 2


async def test_4_4_text_stream_and_response_before_end() -> None:
    client, _ = setup(text_response("hello there, streaming world"))
    result = stream("m", "hi", client=client)
    with pytest.raises(ConfigurationError, match="not finished"):
        result.response()
    assert "".join([d async for d in result.text_stream]) == "hello there, streaming world"
    assert result.response().text == "hello there, streaming world"
    assert result.partial_response is not None


async def test_6_6_stream_retries_only_before_first_event() -> None:
    client, adapter = setup(ServerError("down", provider="s"), text_response("ok"))
    result = stream("m", "hi", client=client, retry_policy=FAST)
    assert "".join([d async for d in result.text_stream]) == "ok"
    assert len(adapter.requests) == 2


async def test_4_7_abort_stops_a_stream() -> None:
    controller = AbortController()
    adapter = ScriptedAdapter([text_response("x" * 400)], chunk_size=1)
    client = Client({"s": adapter})
    got = 0
    with pytest.raises(AbortError):
        async for event in stream("m", "hi", client=client, abort_signal=controller.signal):
            if event.type == StreamEventType.TEXT_DELTA:
                got += 1
                if got == 3:
                    controller.abort()
    assert got == 3


def test_generate_sync_wrapper() -> None:
    client, _ = setup(text_response("sync ok"))
    assert generate_sync("m", "hi", client=client).text == "sync ok"


async def test_5_4_model_output_as_response_message_roundtrips_into_history() -> None:
    client, adapter = setup(tool_call_response(("get_weather", {"city": "A"}, "c1"), text="let me check"),
                            text_response("done"))
    await generate("m", "go", tools=[weather_tool()], client=client)
    assistant = adapter.requests[1].messages[1]
    assert assistant.text == "let me check"
    assert assistant.content[1].tool_call is not None and assistant.content[1].tool_call.id == "c1"


async def test_4_3_messages_list_is_sent_as_given() -> None:
    client, adapter = setup(text_response("fine"))
    history = [Message.user("hi"), Message.assistant("hello"), Message.user("how are you?")]
    result = await generate("m", messages=history, system="sys", client=client)
    assert result.text == "fine"
    assert [(m.role, m.text) for m in adapter.requests[0].messages] == [
        (Role.SYSTEM, "sys"), (Role.USER, "hi"), (Role.ASSISTANT, "hello"), (Role.USER, "how are you?")]
