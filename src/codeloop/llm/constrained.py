"""Constrained decoding of agent replies (issue 10): every reply is one call or the answer.

Small local models often answer in prose or write broken calls. Servers that can constrain
sampling to a JSON Schema (llama.cpp ``llama-server``: ``response_format`` with
``{"type": "json_schema", "json_schema": {"schema": ...}}``, converted to a grammar
server-side; vLLM guided decoding through the same field) make that impossible: each reply
is exactly one of

- ``{"tool": "<name>", "arguments": <an instance of that tool's parameters schema>}``
- ``{"final_answer": "<text>"}``

This module builds that schema from tool definitions (:func:`reply_schema`), teaches the
format in the prompt (:func:`describe_reply_format`), turns a reply into a call or an
answer (:func:`parse_constrained_reply`, never raises: a malformed reply becomes a call
carrying ``parse_error`` with the exact valid form), and detects whether a server honours
the schema (:func:`probe_support`, one small request, cached per server).

Requests in constrained mode carry no ``tools``: llama.cpp refuses a custom grammar
together with tools, and the schema already lists every tool.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codeloop.llm.errors import InvalidRequestError, NotFoundError
from codeloop.llm.types import Message, Request, Response, ResponseFormat, ToolCall, ToolDefinition

CONSTRAINED_MODES = ("auto", "on", "off")
"""``auto``: probe the server and use constrained decoding when it honours the schema;
``on``: always (no probe); ``off``: never."""

PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
"""The tiny schema of the support probe: a server that honours it replies ``{"ok": ...}``."""

Schemas = Mapping[str, Mapping[str, Any]]
"""Tool name → JSON Schema of its arguments."""


def reply_schema(tools: Sequence[ToolDefinition]) -> dict[str, Any]:
    """The JSON Schema whose instances are exactly the valid replies for ``tools``.

    One ``anyOf`` branch per tool (``tool`` is a ``const``, so branches never overlap:
    ``anyOf`` here means "exactly one"; llama.cpp and vLLM handle ``anyOf`` better than
    ``oneOf``) plus the final-answer branch. Every branch closes its keys."""
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": t.name}, "arguments": dict(t.parameters)},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    branches.append({
        "type": "object",
        "properties": {"final_answer": {"type": "string"}},
        "required": ["final_answer"],
        "additionalProperties": False,
    })
    return {"anyOf": branches}


def response_format(tools: Sequence[ToolDefinition]) -> ResponseFormat:
    """The request's ``response_format`` for constrained replies (strict schema)."""
    return ResponseFormat("json_schema", reply_schema(tools), strict=True)


def _example_arguments(schema: Mapping[str, Any]) -> str:
    props: Mapping[str, Any] = schema.get("properties", {}) or {}
    required = list(schema.get("required", []) or [])
    parts = []
    for name in required + [p for p in props if p not in required]:
        kind = (props.get(name) or {}).get("type", "string")
        hint = "" if name in required else ", optional"
        parts.append(f'"{name}": <{kind}{hint}>')
    return "{" + ", ".join(parts) + "}"


def _form(name: str, schema: Mapping[str, Any]) -> str:
    return f'{{"tool": "{name}", "arguments": {_example_arguments(schema)}}}'


def valid_forms(schemas: Schemas) -> str:
    """The exact valid reply forms, one per line (used in the prompt and in error results)."""
    lines = [_form(name, schema) for name, schema in schemas.items()]
    lines.append('{"final_answer": "<your answer to the user>"}')
    return "\n".join(lines)


def describe_reply_format(tools: Sequence[ToolDefinition]) -> str:
    """The system-prompt layer that teaches the constrained reply format."""
    schemas = {t.name: t.parameters for t in tools}
    return (
        "# Reply format\n"
        "Every reply is exactly one JSON object and nothing else. To use a tool:\n"
        '{"tool": "<tool name>", "arguments": {...}}\n'
        "When the task is done, answer the user:\n"
        '{"final_answer": "<text>"}\n'
        "Valid replies:\n" + valid_forms(schemas)
    )


@dataclass(frozen=True)
class ConstrainedReply:
    """A constrained reply understood: a call to run, or the final answer."""

    call: ToolCall | None
    """The call to execute; carries ``parse_error`` when the reply was malformed."""
    answer: str | None
    """The final answer; None when the reply is a call (or malformed)."""


def _error_call(name: str, raw: str, why: str, schemas: Schemas) -> ToolCall:
    if name in schemas:
        message = f"Invalid reply: {why}. Reply with exactly this form:\n{_form(name, schemas[name])}"
    else:
        message = f"Invalid reply: {why}. Reply with exactly one of these JSON objects:\n{valid_forms(schemas)}"
    return ToolCall("call_" + uuid.uuid4().hex[:16], name or "invalid_reply", {}, raw, parse_error=message)


Normalize = Callable[[Mapping[str, Any], dict[str, Any]], dict[str, Any]]
"""``(tool's schema, arguments) -> arguments`` applied before they are checked."""


def parse_constrained_reply(text: str, schemas: Schemas, normalize: Normalize | None = None) -> ConstrainedReply:
    """The call or answer in ``text``; never raises (the model is untrusted).

    Malformed replies (not JSON, not an object, unknown tool, arguments not matching the
    tool's schema, extra or missing keys) give a call with ``parse_error`` that names the
    problem and shows the exact valid form, for the session to return as an error result.
    ``normalize`` rewrites a known tool's arguments first (a small model's empty optional
    values read as absent, issue 20)."""
    raw = text.strip()

    def invalid(why: str, tool: str = "") -> ConstrainedReply:
        return ConstrainedReply(_error_call(tool, raw, why, schemas), None)

    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return invalid(f"not JSON ({exc.msg} at character {exc.pos})")
    except RecursionError:
        return invalid("JSON nested too deeply")
    if not isinstance(value, dict):
        return invalid(f"a JSON {type(value).__name__}, not an object")
    if set(value) == {"final_answer"}:
        answer = value["final_answer"]
        if isinstance(answer, str):
            return ConstrainedReply(None, answer)
        return invalid('"final_answer" must be a string')
    if set(value) != {"tool", "arguments"}:
        keys = ", ".join(sorted(map(str, value))) or "none"
        return invalid(f'keys must be exactly "tool" and "arguments", or "final_answer" (got {keys})')
    name, arguments = value["tool"], value["arguments"]
    if not isinstance(name, str) or name not in schemas:
        return invalid(f"unknown tool {name!r}; available tools: {', '.join(sorted(schemas)) or '(none)'}")
    if not isinstance(arguments, dict):
        return invalid('"arguments" must be a JSON object', name)
    if normalize is not None:
        arguments = normalize(schemas[name], arguments)
    problem = _schema_problem(arguments, schemas[name])
    if problem:
        return invalid(f"arguments for {name}: {problem}", name)
    call_id = "call_" + uuid.uuid4().hex[:16]
    return ConstrainedReply(ToolCall(call_id, name, arguments, json.dumps(arguments)), None)


def _schema_problem(instance: Any, schema: Mapping[str, Any]) -> str:
    import jsonschema  # on first use: keeps it out of `codeloop run`'s start-up
    from jsonschema.exceptions import SchemaError, best_match

    try:
        error = best_match(jsonschema.Draft202012Validator(dict(schema)).iter_errors(instance))
    except SchemaError:
        return ""  # a tool's own broken schema is the tool pipeline's to report
    if error is None:
        return ""
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


# -- support detection ------------------------------------------------------------------


@dataclass(frozen=True)
class Support:
    """Whether a server honours a JSON Schema ``response_format``."""

    supported: bool
    """True when the probe reply parsed and matched the probe schema."""
    reason: str
    """One line saying why (shown to the user when the mode is stated)."""


_SUPPORT_CACHE: dict[str, Support] = {}


def support_key(client: object, request: Request) -> str:
    """The cache key of the server ``request`` goes to: the adapter's base URL when the
    client exposes it (``Client.adapter_for``), else the client's identity."""
    adapter_for = getattr(client, "adapter_for", None)
    if callable(adapter_for):
        try:
            adapter = adapter_for(request)
        except Exception:  # an unknown provider is reported by the real request later
            adapter = None
        base_url = getattr(adapter, "base_url", None)
        if isinstance(base_url, str):
            return f"{getattr(adapter, 'name', '')}|{base_url}"
    return f"client-{id(client)}|{request.provider or ''}"


def clear_support_cache() -> None:
    """Forget every probe result (a server was restarted with other options)."""
    _SUPPORT_CACHE.clear()


async def probe_support(
    complete: Callable[[Request], Awaitable[Response]], model: str, *, provider: str | None = None,
    key: str | None = None,
) -> Support:
    """Ask the server once for a reply constrained to :data:`PROBE_SCHEMA`.

    Supported when the reply parses and validates; a rejected request (any error) or a
    reply that ignores the schema means unsupported. Definitive outcomes (a reply, or a 4xx
    rejection of the request) are cached under ``key`` when given, so a server is probed
    once per process; a transient failure (network, timeout, 5xx) is not cached. Never
    raises (except cancellation)."""
    if key is not None and key in _SUPPORT_CACHE:
        return _SUPPORT_CACHE[key]
    request = Request(
        model=model, provider=provider, max_tokens=16, temperature=0.0,
        messages=[Message.user('Reply with the JSON object {"ok": true}.')],
        response_format=ResponseFormat("json_schema", PROBE_SCHEMA, strict=True),
    )
    definitive = True
    try:
        response = await complete(request)
    except (InvalidRequestError, NotFoundError) as exc:
        support = Support(False, f"the server rejected a JSON Schema response_format ({type(exc).__name__}: {exc})")
    except Exception as exc:  # any failure means "not now"; the next session probes again
        definitive = False
        support = Support(False, f"the probe request failed ({type(exc).__name__}: {exc})")
    else:
        support = _judge_probe(response.text)
    if key is not None and definitive:
        _SUPPORT_CACHE[key] = support
    return support


def _judge_probe(text: str) -> Support:
    import jsonschema  # on first use: keeps it out of `codeloop run`'s start-up

    try:
        value = json.loads(text)
        jsonschema.validate(value, PROBE_SCHEMA)
    except (ValueError, jsonschema.ValidationError):
        return Support(False, f"the server ignored the JSON Schema (reply {text[:60]!r} does not match it)")
    return Support(True, "the server constrains replies to a JSON Schema")


def mode_statement(mode: str, support: Support | None) -> str:
    """One line saying which mode is active and why (for the session's start warning)."""
    if mode == "off":
        return "Constrained decoding: off (tool calls are native or recovered from text)."
    if mode == "on":
        return "Constrained decoding: on (forced; every reply is one JSON tool call or a final answer)."
    if support is not None and support.supported:
        return f"Constrained decoding: on (auto: {support.reason})."
    reason = support.reason if support is not None else "not probed"
    return f"Constrained decoding: off (auto: {reason}); tool calls are native or recovered from text."
