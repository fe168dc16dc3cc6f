"""A real ProviderAdapter that replays scripted answers: for users' tests and the agent loop.

No network. Each call to ``complete`` or ``stream`` takes the next script item:

- a :class:`Response` → returned (``complete``) or streamed as proper events (``stream``:
  STREAM_START, REASONING_*, TEXT_START/DELTA/END, TOOL_CALL_START/DELTA/END, FINISH);
- a callable ``(request) -> Response`` (sync or async) → called, then as above;
- an exception instance → raised (to test retries and error paths).

Every request is recorded in :attr:`ScriptedAdapter.requests`. Running out of script raises
ConfigurationError naming the call number, so a test that makes one call too many fails
with a readable message. Helpers :func:`text_response` and :func:`tool_call_response`
build the usual answers.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeAlias

from codeloop.llm.errors import ConfigurationError
from codeloop.llm.types import (
    ContentKind,
    ContentPart,
    FinishReason,
    Message,
    Request,
    Response,
    Role,
    StreamEvent,
    StreamEventType,
    ToolCall,
    ToolCallData,
    Usage,
    tool_call_from_data,
)

ScriptItem: TypeAlias = (
    Response | BaseException | Callable[[Request], Response] | Callable[[Request], Awaitable[Response]]
)

_ids = itertools.count(1)


def text_response(
    text: str, *, model: str = "scripted", provider: str = "scripted", usage: Usage | None = None,
    finish: str = FinishReason.STOP,
) -> Response:
    """An assistant answer holding ``text``."""
    return Response(
        id=f"resp_{next(_ids)}", model=model, provider=provider, message=Message.assistant(text),
        finish_reason=FinishReason(finish, finish), usage=usage or Usage(1, 1, 2),
    )


def tool_call_response(
    *calls: tuple[str, dict[str, Any] | str] | tuple[str, dict[str, Any] | str, str],
    text: str = "", model: str = "scripted", provider: str = "scripted", usage: Usage | None = None,
) -> Response:
    """An answer calling tools: each call is ``(name, arguments)`` or ``(name, arguments, id)``."""
    parts = [ContentPart.of_text(text)] if text else []
    for call in calls:
        name, arguments = call[0], call[1]
        call_id = call[2] if len(call) == 3 else f"call_{next(_ids)}"
        parts.append(ContentPart.of_tool_call(ToolCallData(call_id, name, arguments)))
    return Response(
        id=f"resp_{next(_ids)}", model=model, provider=provider,
        message=Message(Role.ASSISTANT, parts),
        finish_reason=FinishReason(FinishReason.TOOL_CALLS, "tool_calls"), usage=usage or Usage(1, 1, 2),
    )


def events_from_response(response: Response, *, chunk_size: int = 8) -> list[StreamEvent]:
    """The stream a provider would send for ``response``, text cut into ``chunk_size`` pieces."""
    events = [StreamEvent(StreamEventType.STREAM_START)]
    for index, part in enumerate(response.message.content):
        if part.kind == ContentKind.TEXT and part.text is not None:
            tid = f"text_{index}"
            events.append(StreamEvent(StreamEventType.TEXT_START, text_id=tid))
            events.extend(
                StreamEvent(StreamEventType.TEXT_DELTA, delta=part.text[i : i + chunk_size], text_id=tid)
                for i in range(0, len(part.text), chunk_size)
            )
            events.append(StreamEvent(StreamEventType.TEXT_END, text_id=tid))
        elif part.kind == ContentKind.THINKING and part.thinking is not None:
            events.append(StreamEvent(StreamEventType.REASONING_START))
            events.append(StreamEvent(StreamEventType.REASONING_DELTA, reasoning_delta=part.thinking.text))
            events.append(StreamEvent(StreamEventType.REASONING_END))
        elif part.kind == ContentKind.TOOL_CALL and part.tool_call is not None:
            data = part.tool_call
            call = tool_call_from_data(data)
            raw = call.raw_arguments or ""
            start = ToolCall(call.id, call.name, {}, "")
            events.append(StreamEvent(StreamEventType.TOOL_CALL_START, tool_call=start))
            events.append(StreamEvent(StreamEventType.TOOL_CALL_DELTA, delta=raw, tool_call=start))
            events.append(StreamEvent(StreamEventType.TOOL_CALL_END, tool_call=call))
    return [*events, StreamEvent.finish(response)]


class ScriptedAdapter:
    """Replays ``script`` one item per call and records every request."""

    def __init__(self, script: Iterable[ScriptItem] = (), *, name: str = "scripted", chunk_size: int = 8) -> None:
        self._name = name
        self.script: list[ScriptItem] = list(script)
        """Items not yet consumed; ``push`` appends."""
        self.requests: list[Request] = []
        """Every request received, in order."""
        self.chunk_size = chunk_size
        """Characters per TEXT_DELTA when streaming."""
        self.closed = False
        """True after ``close()``."""

    @property
    def name(self) -> str:
        return self._name

    def push(self, *items: ScriptItem) -> None:
        """Append answers to the script."""
        self.script.extend(items)

    async def _next(self, request: Request) -> Response:
        self.requests.append(request)
        if not self.script:
            raise ConfigurationError(
                f"ScriptedAdapter {self._name!r}: no scripted answer left for call #{len(self.requests)} "
                f"(model {request.model!r}); push more answers"
            )
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Response):
            return item
        result = item(request)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, Response):
            raise ConfigurationError(
                f"ScriptedAdapter {self._name!r}: script callable returned {type(result).__name__}, not Response"
            )
        return result

    async def complete(self, request: Request) -> Response:
        """The next scripted answer."""
        return await self._next(request)

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        """The next scripted answer as stream events."""
        response = await self._next(request)
        for event in events_from_response(response, chunk_size=self.chunk_size):
            yield event

    def supports_tool_choice(self, mode: str) -> bool:
        return True

    async def close(self) -> None:
        self.closed = True
