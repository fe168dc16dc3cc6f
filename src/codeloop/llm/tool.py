"""Active tools and their concurrent execution (unified-llm spec §5.1, §5.2, §5.7, §5.8).

A :class:`Tool` is a :class:`ToolDefinition` plus an optional ``execute`` handler (sync
or async). :func:`execute_tool_calls` runs every call of one model response at once and
returns one :class:`ToolResult` per call, in call order. It never raises for anything the
model caused: an unknown tool, arguments that are not a JSON object, arguments failing the
schema (after an optional repair) and a handler that raises all become results with
``is_error=True`` that the model can read. Only an abort propagates.

Handlers receive the parsed arguments as keyword arguments, plus any of ``messages``,
``abort_signal`` and ``tool_call_id`` they declare (context injection, §5.2); a handler
declaring a single ``arguments`` parameter gets the whole dict instead.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from codeloop.llm.abort import AbortSignal, abortable
from codeloop.llm.errors import AbortError
from codeloop.llm.types import Message, ToolCall, ToolDefinition, ToolResult

ToolHandler = Callable[..., Any]
RepairToolCall = Callable[[ToolCall, str], Awaitable[dict[str, Any] | None] | dict[str, Any] | None]
"""Given a call and what is wrong with it, return fixed arguments or None to give up (§5.8)."""

_INJECTABLE = ("messages", "abort_signal", "tool_call_id")


@dataclass(frozen=True, slots=True)
class Tool(ToolDefinition):
    """A tool the model may call (name and schema validated as in ToolDefinition); with
    ``execute`` it is active (§5.5)."""

    execute: ToolHandler | None = None
    """Handler; None makes the tool passive (calls are returned to the caller)."""

    @property
    def definition(self) -> ToolDefinition:
        """What is sent to the provider."""
        return ToolDefinition(self.name, self.description, self.parameters)


def _content(value: Any) -> str | dict[str, Any] | list[Any]:
    if isinstance(value, (str, dict, list)):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


def _schema_error(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    import jsonschema  # on first use: keeps it out of `codeloop run`'s start-up

    try:
        jsonschema.validate(arguments, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"arguments do not match the schema at {where}: {exc.message}"
    except jsonschema.SchemaError:
        return None  # a bad schema is the developer's problem, not the model's; let the provider judge
    return None


async def _invoke(
    tool: Tool, arguments: dict[str, Any], call: ToolCall, messages: Sequence[Message],
    abort_signal: AbortSignal | None,
) -> Any:
    assert tool.execute is not None
    handler = tool.execute
    try:
        params = inspect.signature(handler).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    context = {"messages": list(messages), "abort_signal": abort_signal, "tool_call_id": call.id}
    if list(params) == ["arguments"]:
        kwargs: dict[str, Any] = {"arguments": arguments}
    else:
        kwargs = dict(arguments)
        accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        for key in _INJECTABLE:
            if key in params and key not in arguments:
                kwargs[key] = context[key]
        if not accepts_any:
            kwargs = {k: v for k, v in kwargs.items() if k in params}
    if inspect.iscoroutinefunction(handler):
        return await handler(**kwargs)
    result = await asyncio.to_thread(handler, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


async def execute_tool_call(
    tools: Sequence[Tool], call: ToolCall, *, messages: Sequence[Message] = (),
    abort_signal: AbortSignal | None = None, repair_tool_call: RepairToolCall | None = None,
    validate: bool = True,
) -> ToolResult:
    """Run one call; every failure the model caused becomes an error result."""
    tool = next((t for t in tools if t.name == call.name), None)
    if tool is None or tool.execute is None:
        known = ", ".join(t.name for t in tools if t.execute is not None) or "none"
        return ToolResult(call.id, f"Unknown tool: {call.name!r}. Available tools: {known}", True)
    problem = call.parse_error
    arguments = call.arguments
    if problem is None and validate:
        problem = _schema_error(tool.parameters, arguments)
    if problem is not None and repair_tool_call is not None:
        repaired = repair_tool_call(call, problem)
        if inspect.isawaitable(repaired):
            repaired = await repaired
        if isinstance(repaired, dict):
            arguments = repaired
            problem = _schema_error(tool.parameters, arguments) if validate else None
    if problem is not None:
        return ToolResult(call.id, f"Invalid arguments for tool {call.name!r}: {problem}", True)
    try:
        value = await abortable(_invoke(tool, arguments, call, messages, abort_signal), abort_signal)
    except AbortError:
        raise
    except Exception as exc:  # the handler's failure is data for the model (§5.2)
        return ToolResult(call.id, f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}", True)
    return ToolResult(call.id, _content(value), False)


async def execute_tool_calls(
    tools: Sequence[Tool], calls: Sequence[ToolCall], *, messages: Sequence[Message] = (),
    abort_signal: AbortSignal | None = None, repair_tool_call: RepairToolCall | None = None,
    validate: bool = True,
) -> list[ToolResult]:
    """Run all ``calls`` concurrently; results come back in call order (§5.7)."""
    runs = (
        execute_tool_call(
            tools, call, messages=messages, abort_signal=abort_signal, repair_tool_call=repair_tool_call,
            validate=validate,
        )
        for call in calls
    )
    return list(await asyncio.gather(*runs))
