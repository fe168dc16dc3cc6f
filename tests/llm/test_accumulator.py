"""StreamAccumulator (spec §4.4) and abort signals (§4.7)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from codeloop.llm.abort import AbortController, abortable
from codeloop.llm.accumulator import StreamAccumulator
from codeloop.llm.adapters.scripted import events_from_response, tool_call_response
from codeloop.llm.errors import AbortError
from codeloop.llm.types import ContentKind, FinishReason, StreamEvent, StreamEventType, ToolCall, Usage

E = StreamEventType


def test_4_4_accumulator_keeps_segment_order_and_parses_arguments() -> None:
    acc = StreamAccumulator(provider="p", model="m", response_id="r1")
    start = ToolCall("c1", "read", {}, "")
    for event in [
        StreamEvent(E.STREAM_START),
        StreamEvent(E.REASONING_START), StreamEvent(E.REASONING_DELTA, reasoning_delta="hmm"),
        StreamEvent(E.REASONING_END),
        StreamEvent(E.TEXT_START, text_id="a"), StreamEvent(E.TEXT_DELTA, delta="Hel", text_id="a"),
        StreamEvent(E.TOOL_CALL_START, tool_call=start),
        StreamEvent(E.TEXT_DELTA, delta="lo", text_id="a"), StreamEvent(E.TEXT_END, text_id="a"),
        StreamEvent(E.TOOL_CALL_DELTA, delta='{"path":', tool_call=start),
        StreamEvent(E.TOOL_CALL_DELTA, delta=' "x"}', tool_call=start),
        StreamEvent(E.FINISH, finish_reason=FinishReason("tool_calls"), usage=Usage(3, 4, 7)),
    ]:
        acc.process(event)
    resp = acc.response()
    assert [p.kind for p in resp.message.content] == [ContentKind.THINKING, ContentKind.TEXT, ContentKind.TOOL_CALL]
    assert resp.text == "Hello" and resp.reasoning == "hmm"
    assert resp.tool_calls[0].arguments == {"path": "x"}
    assert (resp.id, resp.provider, resp.usage.total_tokens, resp.finish_reason.reason) == ("r1", "p", 7, "tool_calls")


def test_4_4_accumulating_a_scripted_stream_equals_the_response() -> None:
    original = tool_call_response(("f", {"a": 1}, "c9"), text="calling f")
    acc = StreamAccumulator()
    for event in events_from_response(original, chunk_size=3):
        if event.type != E.FINISH:
            acc.process(event)
    rebuilt = acc.response()
    assert rebuilt.text == original.text and rebuilt.tool_calls == original.tool_calls


async def test_4_7_abort_from_another_thread_interrupts() -> None:
    controller = AbortController()
    threading.Timer(0.05, controller.abort, args=("from a thread",)).start()
    with pytest.raises(AbortError, match="from a thread"):
        await abortable(asyncio.sleep(30), controller.signal)


async def test_4_7_abortable_returns_result_when_not_aborted() -> None:
    controller = AbortController()

    async def value() -> int:
        return 42

    assert await abortable(value(), controller.signal) == 42
    controller.abort()
    controller.abort()  # idempotent
    assert controller.signal.aborted
