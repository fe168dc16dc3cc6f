"""Structured output: generate_object() and stream_object() (unified-llm spec §4.5, §4.6).

Strategy per provider: OpenAI, Gemini and OpenAI-compatible servers get a native
``json_schema`` response format; Anthropic (no native mode) gets the schema as an
instruction in the system prompt. Either way the text is parsed (a fenced ```json block
is accepted) and validated with JSON Schema; failure raises NoObjectGeneratedError with
the reason and the raw text. Validation failures are not retried (§6.6).

:func:`parse_partial_json` turns a JSON prefix into the value it promises so far (open
strings, arrays and objects closed; an unfinished key or literal dropped), which is what
stream_object yields as tokens arrive.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace
from typing import Any

from codeloop.llm.client import Client, get_default_client
from codeloop.llm.errors import NoObjectGeneratedError
from codeloop.llm.generate import GenerateResult, StreamResult, generate, stream
from codeloop.llm.types import Message, ResponseFormat, StreamEventType

_FENCE = re.compile(r"^\s*```(?:json|JSON)?[ \t]*\r?\n?(.*?)(?:\r?\n?```\s*)?$", re.S)


def _strip_fence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text.strip()


def parse_json_object(text: str, schema: dict[str, Any]) -> Any:
    """The value in ``text`` validated against ``schema``, or NoObjectGeneratedError."""
    import jsonschema  # on first use: keeps it out of `codeloop run`'s start-up

    body = _strip_fence(text)
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise NoObjectGeneratedError(
            f"the model's output is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
            text=text, cause=exc,
        ) from exc
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise NoObjectGeneratedError(
            f"the model's JSON does not match the schema at {where}: {exc.message}", text=text, cause=exc
        ) from exc
    return value


def parse_partial_json(text: str) -> Any:
    """The value a JSON prefix promises so far, or None when nothing is parseable yet."""
    body = _strip_fence(text) if text.lstrip().startswith("```") else text
    try:
        return json.loads(body)
    except ValueError:
        pass
    stack: list[str] = []
    in_string = escaped = False
    states: list[tuple[int, str, bool]] = []
    for index, ch in enumerate(body):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
        if not escaped:
            states.append((index + 1, "".join(reversed(stack)), in_string))
    # Back off from the end until closing what is open yields JSON; bounded so a long
    # malformed tail costs at most a few hundred attempts.
    for end, closers, open_string in reversed(states[-400:]):
        candidate = body[:end] + '"' if open_string else body[:end].rstrip()
        try:
            return json.loads(candidate + closers)
        except ValueError:
            continue
    return None


def _schema_instruction(schema: dict[str, Any]) -> str:
    return (
        "Answer with a single JSON value that matches this JSON Schema, and nothing else "
        f"(no prose, no code fence):\n{json.dumps(schema)}"
    )


def _prepare(kwargs: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Native schema mode, or the schema as a system instruction for Anthropic."""
    client: Client = kwargs.get("client") or get_default_client()
    provider = kwargs.get("provider") or client.default_provider
    kwargs = {**kwargs, "client": client}
    if provider == "anthropic":
        system = kwargs.get("system")
        kwargs["system"] = f"{system}\n\n{_schema_instruction(schema)}" if system else _schema_instruction(schema)
    else:
        kwargs["response_format"] = ResponseFormat(type="json_schema", json_schema=schema, strict=True)
    return kwargs


async def generate_object(
    model: str, prompt: str | None = None, *, schema: dict[str, Any], messages: Sequence[Message] | None = None,
    **kwargs: Any,
) -> GenerateResult:
    """Generate a value matching ``schema``; ``result.output`` holds it (§4.5).

    Accepts generate()'s keyword arguments. Raises NoObjectGeneratedError when the final
    text does not parse or validate.
    """
    kwargs = _prepare({**kwargs, "messages": messages}, schema)
    result = await generate(model, prompt, **kwargs)
    return replace(result, output=parse_json_object(result.text, schema))


class StreamObjectResult:
    """Async iterator of growing partial values; ``object()`` after the end (§4.6)."""

    def __init__(self, inner: StreamResult, schema: dict[str, Any]) -> None:
        self._inner = inner
        self._schema = schema
        self._text = ""
        self._object: Any = None
        self._done = False

    def __aiter__(self) -> AsyncGenerator[Any, None]:
        return self._partials()

    async def _partials(self) -> AsyncGenerator[Any, None]:
        last: Any = None
        async for event in self._inner:
            if event.type == StreamEventType.STEP_FINISH:
                self._text = ""
            elif event.type == StreamEventType.TEXT_DELTA and event.delta:
                self._text += event.delta
                partial = parse_partial_json(self._text)
                if partial is not None and partial != last:
                    last = partial
                    yield partial
        self._object = parse_json_object(self._inner.response().text, self._schema)
        self._done = True

    def object(self) -> Any:
        """The complete validated value; NoObjectGeneratedError if the stream is not finished."""
        if not self._done:
            raise NoObjectGeneratedError("the stream has not finished: iterate it to the end before object()")
        return self._object

    @property
    def stream_result(self) -> StreamResult:
        """The underlying event stream's result (response, steps)."""
        return self._inner


def stream_object(
    model: str, prompt: str | None = None, *, schema: dict[str, Any], messages: Sequence[Message] | None = None,
    **kwargs: Any,
) -> StreamObjectResult:
    """Stream partial values of ``schema`` as tokens arrive (§4.6)."""
    kwargs = _prepare({**kwargs, "messages": messages}, schema)
    return StreamObjectResult(stream(model, prompt, **kwargs), schema)
