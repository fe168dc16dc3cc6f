"""Collect stream events into a Response (unified-llm spec §4.4 StreamAccumulator).

Adapters use it to build the FINISH event's response from the events they emitted, and
consumers use it to turn any stream into what ``complete()`` would have returned. Content
parts keep the order in which their segments started: text, reasoning and tool calls
interleave as the model produced them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codeloop.llm.types import (
    ContentPart,
    FinishReason,
    Message,
    RateLimitInfo,
    Response,
    Role,
    StreamEvent,
    StreamEventType,
    ToolCall,
    ToolCallData,
    Usage,
    Warning,
    tool_arguments_or_raw,
)


@dataclass(slots=True)
class _Segment:
    kind: str
    key: str
    chunks: list[str] = field(default_factory=list)
    call: ToolCall | None = None


class StreamAccumulator:
    """Feed events with :meth:`process`; read :meth:`response` at any time."""

    def __init__(self, *, provider: str = "", model: str = "", response_id: str = "") -> None:
        self.provider = provider
        self.model = model
        self.response_id = response_id
        self.finish_reason: FinishReason | None = None
        self.usage: Usage | None = None
        self.warnings: list[Warning] = []
        self.rate_limit: RateLimitInfo | None = None
        self._segments: list[_Segment] = []
        self._open: dict[tuple[str, str], _Segment] = {}
        self._final: Response | None = None

    def _segment(self, kind: str, key: str) -> _Segment:
        seg = self._open.get((kind, key))
        if seg is None:
            seg = _Segment(kind, key)
            self._segments.append(seg)
            self._open[(kind, key)] = seg
        return seg

    def process(self, event: StreamEvent, *, reasoning_key: str = "0") -> None:
        """Fold ``event`` in. ``reasoning_key`` separates thinking blocks (default: one block)."""
        etype = event.type
        if etype == StreamEventType.TEXT_DELTA and event.delta is not None:
            self._segment("text", event.text_id or "0").chunks.append(event.delta)
        elif etype == StreamEventType.TEXT_START:
            self._segment("text", event.text_id or "0")
        elif etype == StreamEventType.TEXT_END:
            self._open.pop(("text", event.text_id or "0"), None)
        elif etype == StreamEventType.REASONING_DELTA and event.reasoning_delta is not None:
            self._segment("reasoning", reasoning_key).chunks.append(event.reasoning_delta)
        elif etype == StreamEventType.REASONING_END:
            self._open.pop(("reasoning", reasoning_key), None)
        elif etype in (StreamEventType.TOOL_CALL_START, StreamEventType.TOOL_CALL_DELTA):
            if event.tool_call is not None:
                seg = self._segment("tool", event.tool_call.id)
                seg.call = seg.call or event.tool_call
                if etype == StreamEventType.TOOL_CALL_DELTA and event.delta is not None:
                    seg.chunks.append(event.delta)
        elif etype == StreamEventType.TOOL_CALL_END and event.tool_call is not None:
            seg = self._segment("tool", event.tool_call.id)
            seg.call = event.tool_call
            seg.chunks = [event.tool_call.raw_arguments or ""]
            self._open.pop(("tool", event.tool_call.id), None)
        elif etype in (StreamEventType.FINISH, StreamEventType.STEP_FINISH):
            self.finish_reason = event.finish_reason or self.finish_reason
            self.usage = event.usage or self.usage
            if event.response is not None:
                self._final = event.response

    def _parts(self) -> list[ContentPart]:
        parts: list[ContentPart] = []
        for seg in self._segments:
            if seg.kind == "text":
                parts.append(ContentPart.of_text("".join(seg.chunks)))
            elif seg.kind == "reasoning":
                parts.append(ContentPart.of_thinking("".join(seg.chunks)))
            elif seg.call is not None:
                call = seg.call
                raw = "".join(seg.chunks)
                arguments: dict[str, Any] | str = call.arguments if not raw else tool_arguments_or_raw(raw)
                parts.append(
                    ContentPart.of_tool_call(ToolCallData(call.id, call.name, arguments, signature=call.signature))
                )
        return parts

    def response(self) -> Response:
        """The final response when a FINISH carried one, else one built from the events so far."""
        if self._final is not None:
            return self._final
        return Response(
            id=self.response_id,
            model=self.model,
            provider=self.provider,
            message=Message(Role.ASSISTANT, self._parts()),
            finish_reason=self.finish_reason or FinishReason(FinishReason.OTHER),
            usage=self.usage or Usage(),
            warnings=list(self.warnings),
            rate_limit=self.rate_limit,
        )
