"""Tool calls written as text (issue 10): parsing and the syntax the ``text`` profile teaches.

Small local models often write their calls as text instead of structured ``tool_calls``.
:func:`parse_text_tool_calls` finds, in order of appearance:

- the tagged syntax taught by the ``text`` profile (no JSON escaping for code)::

      <tool name="write_file">
      <path>hello.py</path>
      <content>
      print("Hello")
      </content>
      </tool>

- ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Qwen/Hermes style);
- fenced JSON blocks and bare JSON objects holding ``"name"`` and ``"arguments"``
  (or ``"parameters"``).

The model is untrusted: nothing here raises. A call that cannot be parsed, or names an
unknown tool, becomes a ``ToolCall`` with ``parse_error`` set to a message giving the
exact valid form, which the session returns to the model as an error result.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from codeloop.llm.types import ToolCall
from codeloop.tools.suggestions import equivalent_call

Schemas = Mapping[str, Mapping[str, Any]]
"""Tool name → JSON Schema of its arguments (the known tools)."""

# A call ends at </tool> or at a </tool_result> a small model writes in its place (seen with
# the 1.5B model: read_file "closed" by </tool_result>, then a write_file, read as one
# read_file holding the write's content). Not at the next "<tool name=": file content may hold one.
_TAGGED = re.compile(r"<tool\s+name\s*=\s*[\"']?([\w.-]+)[\"']?\s*>(.*?)(?:</tool(?:_result)?\s*>|\Z)", re.DOTALL)
_PARAM = re.compile(r"<([A-Za-z_][\w-]*)>(.*?)</\1\s*>", re.DOTALL)
_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)


def new_call_id() -> str:
    """A fresh id for a call recovered from text."""
    return "call_" + uuid.uuid4().hex[:16]


def tagged_example(name: str, schema: Mapping[str, Any]) -> str:
    """The exact tagged form of a call to ``name`` (required parameters first)."""
    props: Mapping[str, Any] = schema.get("properties", {}) or {}
    required = list(schema.get("required", []) or [])
    ordered = required + [p for p in props if p not in required]
    lines = [f'<tool name="{name}">']
    for param in ordered:
        ptype = (props.get(param) or {}).get("type", "string")
        hint = "required" if param in required else "optional"
        lines.append(f"<{param}>{ptype} ({hint})</{param}>")
    lines.append("</tool>")
    return "\n".join(lines)


def filled_example(name: str, args: Mapping[str, Any]) -> str:
    """The tagged form of one concrete call."""
    params = [f"<{k}>{v if isinstance(v, str) else json.dumps(v)}</{k}>" for k, v in args.items()]
    return "\n".join([f'<tool name="{name}">', *params, "</tool>"])


def _unknown(name: str, schemas: Schemas, raw: str, args: Mapping[str, Any] | None = None) -> ToolCall:
    known = ", ".join(sorted(schemas)) or "(none)"
    msg = f"Unknown tool: {name}. Available tools: {known}."
    equivalent = equivalent_call(name, args, schemas)
    if equivalent is not None:
        msg += f" To do that, call {equivalent[0]}:\n{filled_example(*equivalent)}"
    return ToolCall(new_call_id(), name, {}, raw, parse_error=msg)


def _invalid(name: str, schemas: Schemas, raw: str, why: str) -> ToolCall:
    form = tagged_example(name, schemas[name]) if name in schemas else ""
    msg = f"Invalid call to {name}: {why}."
    if form:
        msg += f" Write the call exactly in this form:\n{form}"
    return ToolCall(new_call_id(), name, {}, raw, parse_error=msg)


def _coerce(value: str, spec: Mapping[str, Any]) -> Any:
    """Convert a tagged parameter's text by its schema type; raises ValueError."""
    ptype = spec.get("type", "string")
    if isinstance(ptype, list):
        ptype = next((t for t in ptype if t != "null"), "string")
    if ptype == "string":
        return value
    text = value.strip()
    if ptype == "integer":
        return int(text)
    if ptype == "number":
        return float(text)
    if ptype == "boolean":
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ValueError(f"expected true or false, got {text[:40]!r}")
    return json.loads(text)


VERBATIM_PARAMS = frozenset({"content", "old_string", "new_string", "patch", "text", "message", "task"})
"""Parameters whose text is kept byte for byte (apart from the newline after the opening tag)."""


def _param_text(param: str, value: str) -> str:
    """A block value (``<content>\n...``) loses the newline after its opening tag; other
    single-line values (paths, commands, patterns) lose surrounding whitespace."""
    if value.startswith("\n"):
        value = value[1:]
    if param in VERBATIM_PARAMS:
        return value
    return value.strip() if "\n" not in value.strip() else value


def _checked(name: str, args: dict[str, Any], schemas: Schemas, raw: str) -> ToolCall:
    """A call, or an error with the valid form when a required parameter is missing."""
    missing = [p for p in schemas[name].get("required", []) or [] if p not in args]
    if missing:
        return _invalid(name, schemas, raw, "missing required parameter " + ", ".join(f"<{m}>" for m in missing))
    return ToolCall(new_call_id(), name, args, json.dumps(args))


def tagged_params(body: str) -> dict[str, str]:
    """The ``<param>value</param>`` pairs of a tagged call's body, as text."""
    return {m.group(1): _param_text(m.group(1), m.group(2)) for m in _PARAM.finditer(body)}


def _tagged_call(name: str, body: str, schemas: Schemas, lenient: bool = False) -> ToolCall:
    raw = body
    if name not in schemas:
        return _unknown(name, schemas, raw, tagged_params(body))
    props: Mapping[str, Any] = schemas[name].get("properties", {}) or {}
    required = schemas[name].get("required", []) or []
    args: dict[str, Any] = {}
    pairs = [(m.group(1), m.group(2)) for m in _PARAM.finditer(body)]
    if lenient and any(p not in dict(pairs) for p in required):
        pairs += [(p, v) for p, v in _unclosed_params(body, props) if p not in dict(pairs)]
    for param, text in pairs:
        value = _param_text(param, text)
        if lenient and not value.strip() and param not in required:
            continue  # <offset></offset>: an optional parameter left empty is absent
        spec = props.get(param, {"type": "string"})
        try:
            args[param] = _coerce(value, spec)
        except (ValueError, RecursionError) as exc:
            return _invalid(name, schemas, raw, f"parameter <{param}> is not a valid {spec.get('type')} ({exc})")
    return _checked(name, args, schemas, raw)


def _unclosed_params(body: str, props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Parameters opened but never closed (``<old_string>x\n<new_string>y``, seen with the
    1.5B model): each value runs to the next known parameter's opening tag, its own closing
    tag, or the end of the call. Only the schema's parameter names count as tags."""
    if not props:
        return []
    names = "|".join(re.escape(p) for p in props)
    opening = list(re.finditer(rf"<({names})>", body))
    found: list[tuple[str, str]] = []
    for i, match in enumerate(opening):
        end = opening[i + 1].start() if i + 1 < len(opening) else len(body)
        value = body[match.end():end]
        closed = value.find(f"</{match.group(1)}>")
        found.append((match.group(1), (value[:closed] if closed >= 0 else value).rstrip("\n")))
    return found


def _json_call(obj: Any, schemas: Schemas, raw: str) -> ToolCall | None:
    """A call from a decoded JSON value, None when it is not shaped like a call."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    if "arguments" not in obj and "parameters" not in obj:
        return None
    name = obj["name"]
    args = obj.get("arguments", obj.get("parameters"))
    if name not in schemas:
        return _unknown(name, schemas, raw, args if isinstance(args, dict) else None)
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError) as exc:  # a model's JSON may nest deeper than Python decodes
            return _invalid(name, schemas, raw, f"arguments are not valid JSON ({getattr(exc, 'msg', exc)})")
    if not isinstance(args, dict):
        return _invalid(name, schemas, raw, "arguments must be a JSON object")
    return _checked(name, args, schemas, raw)


def _json_objects(text: str) -> list[tuple[int, int, Any]]:
    """Every top-level JSON object in ``text`` as (start, end, value)."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, Any]] = []
    pos = text.find("{")
    while pos != -1:
        try:
            value, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        except RecursionError:  # nested too deep to decode: nothing after it is read
            break
        found.append((pos, end, value))
        pos = text.find("{", end)
    return found


def parse_text_tool_calls(text: str, schemas: Schemas, *, lenient: bool = False) -> tuple[ToolCall, ...]:
    """Tool calls written in ``text``, in order of appearance (malformed ones carry
    ``parse_error``); see the module docstring for the accepted forms. ``lenient`` (small
    models, issue 20): an optional tagged parameter left empty is absent, not a bad value."""
    found: list[tuple[int, ToolCall]] = []
    taken: list[tuple[int, int]] = []

    for m in _TAGGED.finditer(text):
        found.append((m.start(), _tagged_call(m.group(1), m.group(2), schemas, lenient)))
        taken.append(m.span())
    for m in _HERMES.finditer(text):
        if any(s <= m.start() < e for s, e in taken):
            continue
        body = m.group(1)
        taken.append(m.span())
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError) as exc:
            name_match = re.search(r'"name"\s*:\s*"([\w.-]+)"', body)
            name = name_match.group(1) if name_match else "?"
            bad = (_invalid(name, schemas, body, f"the JSON inside <tool_call> does not parse ({getattr(exc, 'msg', exc)})")
                   if name in schemas else _unknown(name, schemas, body))
            found.append((m.start(), bad))
            continue
        hermes = _json_call(obj, schemas, body)
        if hermes is not None:
            found.append((m.start(), hermes))
    for start, end, obj in _json_objects(text):
        if any(s <= start < e for s, e in taken):
            continue
        call = _json_call(obj, schemas, text[start:end])
        if call is not None:
            found.append((start, call))
            taken.append((start, end))
    found.sort(key=lambda item: item[0])
    return tuple(call for _, call in found)

