"""Finding and validating one ``AGENT_REQUEST v1`` in a model's reply (codali spec §1, §2).

Models write the request in the spec's YAML-like form or as JSON, inside or outside a
code fence, with prose before and after. :func:`parse_agent_request` finds it and
returns a typed :class:`AgentRequest`, or raises :class:`AgentRequestError` whose
message names the line (in the whole reply) and the field, so the model can fix it.

Accepted shapes::

    AGENT_REQUEST v1            AGENT_REQUEST v1          {"AGENT_REQUEST": "v1",
    role: architect             {"role": "architect",      "role": ..., "needs": [...]}
    request_id: 123              "needs": [...]}
    needs:
      - type: file.read         (a bare JSON object with "role" and "needs" works too)
        path: src/a.py
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from codeloop.codali.needs import NEED_TYPES, ROLES, NeedSpecError, check_need
from codeloop.codali.yamlish import Located, YamlishError, located, parse_block, plain
from codeloop.policy.input_limits import MAX_JSON_DEPTH, InputLimitError, check_json_depth

_HEADER = re.compile(r"^[\s>#*_`]*AGENT_REQUEST\b[\s*_`]*(?:v(?:ersion)?\s*[:=]?\s*(\S+?))?[\s*_`:]*$", re.I)
_FENCE = re.compile(r"^\s*(```|~~~)")
_TOP_KEY = re.compile(r"^(role|request_id|needs|context)\s*:", re.I)
_TOO_DEEP = f"JSON nested deeper than Python can parse; keep it under {MAX_JSON_DEPTH} levels"
_OTHER_ENVELOPE = re.compile(r"^\s*(AGENT_REQUEST|CODALI_RESPONSE)\b")


class AgentRequestError(ValueError):
    """The reply holds no valid ``AGENT_REQUEST v1``; ``line``/``field`` locate the problem."""

    def __init__(self, message: str, line: int | None = None, field: str | None = None) -> None:
        where = [f"line {line}"] if line is not None else []
        if field:
            where.append(f"field {field}")
        super().__init__(f"AGENT_REQUEST {', '.join(where)}: {message}" if where else f"AGENT_REQUEST: {message}")
        self.line = line
        self.field = field
        self.reason = message


@dataclass(frozen=True)
class Need:
    """One entry of ``needs`` (spec §2)."""

    type: str
    """One of :data:`codeloop.codali.needs.NEED_TYPES`."""
    params: Mapping[str, Any]
    """Validated parameters with aliases normalized (``path`` → ``file`` for impact...)."""
    index: int
    """Position in ``needs`` (0-based)."""
    line: int | None
    """Line of the entry in the reply (``None`` when unknown)."""


@dataclass(frozen=True)
class AgentRequest:
    """A parsed, validated ``AGENT_REQUEST v1``."""

    role: str
    """librarian, architect, builder, critic or interpreter."""
    request_id: str
    """Echoed in the response; generated (``req-...``) when the model left it out."""
    needs: tuple[Need, ...]
    """What to run, in order."""
    summary: str = ""
    """``context.summary``."""
    constraints: tuple[str, ...] = ()
    """``context.constraints``."""
    warnings: tuple[str, ...] = ()
    """Things tolerated while parsing (``request_id_missing``), repeated in the response."""


@dataclass(frozen=True)
class _Leniency:
    role: str | None = None
    skip_bad_needs: bool = False


def parse_agent_request(reply: str, *, role: str | None = None, skip_bad_needs: bool = False) -> AgentRequest:
    """The first ``AGENT_REQUEST`` of ``reply``; raises :class:`AgentRequestError`.

    A caller that knows who is asking (the roles pipeline) passes ``role``: a missing or
    different role in the request is then replaced by it with a ``role_replaced`` warning
    instead of failing. ``skip_bad_needs`` answers the valid needs and skips each invalid one
    with a ``need_skipped`` warning holding the error; it still fails when no need is valid.
    Both are for small models whose request is mostly right; the default is strict."""
    leniency = _Leniency(role, skip_bad_needs)
    try:
        check_json_depth(reply, "the request")
    except InputLimitError as exc:
        raise AgentRequestError(str(exc)) from None
    lines = reply.split("\n")
    for number, line in enumerate(lines, start=1):
        match = _HEADER.match(line)
        if match:
            _check_version(match, number)
            return _after_header(lines, number, leniency)
    data = _find_json(reply)
    if data is not None:
        obj, start = data
        return _from_json(obj, start, leniency)
    raise AgentRequestError(
        "no 'AGENT_REQUEST v1' found; start the request with a line 'AGENT_REQUEST v1' followed by "
        "role, request_id, needs and context")


def _check_version(match: re.Match[str] | None, line: int) -> None:
    version = (match.group(1) or "") if match else ""
    if version and version.lower().lstrip("v") != "1":
        raise AgentRequestError(f"unsupported version {version!r}; write 'AGENT_REQUEST v1'", line, "version")


def _after_header(lines: list[str], header_line: int, leniency: _Leniency) -> AgentRequest:
    index = header_line  # 0-based index of the line after the header
    # Blank lines, an opening fence, or a repeated header ("### AGENT_REQUEST" above a fenced
    # "AGENT_REQUEST v1") may sit between the header and the body.
    while index < len(lines) and (not lines[index].strip() or _FENCE.match(lines[index])
                                  or _HEADER.match(lines[index])):
        _check_version(_HEADER.match(lines[index]), index + 1)
        index += 1
    if index < len(lines) and lines[index].lstrip().startswith("{"):
        decoded = _decode_json_at("\n".join(lines[index:]), index + 1)
        return _from_json(decoded, index + 1, leniency)
    body: list[str] = []
    end = index
    while end < len(lines):
        line = lines[end]
        if _FENCE.match(line) or _OTHER_ENVELOPE.match(line):
            break
        stripped = line.strip()
        if stripped and line[:1] not in (" ", "-") and not _TOP_KEY.match(line):
            break  # prose after the request
        body.append(line)
        end += 1
    try:
        root = parse_block("\n".join(body), first_line=index + 1)
    except YamlishError as exc:
        raise AgentRequestError(str(exc), exc.line) from None
    if not isinstance(root.value, dict):
        raise AgentRequestError("expected 'key: value' lines (role, request_id, needs, context)", root.line)
    return _build(root.value, header_line, leniency)


def _decode_json_at(text: str, first_line: int) -> Any:
    try:
        value, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except json.JSONDecodeError as exc:
        raise AgentRequestError(f"invalid JSON: {exc.msg} (column {exc.colno})", first_line + exc.lineno - 1) from None
    except ValueError as exc:  # a number longer than int() takes
        raise AgentRequestError(f"invalid JSON: {exc}", first_line) from None
    except RecursionError:  # nesting the depth check could not see (quotes in prose around it)
        raise AgentRequestError(_TOO_DEEP, first_line) from None
    return value


def json_objects(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(offset, object) of each JSON object that starts at a ``{`` of ``text``, nested ones
    included; nesting too deep to decode is an :class:`AgentRequestError` naming its line."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:  # not JSON, or a number too long for int()
            continue
        except RecursionError:
            raise AgentRequestError(_TOO_DEEP, text.count("\n", 0, match.start()) + 1) from None
        yield match.start(), value


def _find_json(reply: str) -> tuple[Any, int] | None:
    for start, value in json_objects(reply):
        if "needs" in value or "AGENT_REQUEST" in value:
            return value, reply.count("\n", 0, start) + 1
    return None


def _from_json(value: Any, line: int, leniency: _Leniency) -> AgentRequest:
    if not isinstance(value, dict):
        raise AgentRequestError("the JSON request must be an object with role, request_id and needs", line)
    if isinstance(value.get("AGENT_REQUEST"), dict):
        value = value["AGENT_REQUEST"]
    else:
        version = str(value.pop("AGENT_REQUEST", value.pop("version", "v1"))).lower().lstrip("v")
        if version not in {"1", "1.0"}:
            raise AgentRequestError(f"unsupported version {version!r}; use v1", line, "version")
    wrapped = located(value, line)
    assert isinstance(wrapped.value, dict)
    return _build(wrapped.value, line, leniency)


def _build(fields: dict[str, Located], header_line: int, leniency: _Leniency) -> AgentRequest:
    warnings: list[str] = []
    role_node = fields.get("role")
    written = "" if role_node is None or role_node.value is None else str(role_node.value).strip().lower()
    if leniency.role is not None:
        role = leniency.role
        if written != role:
            warnings.append(f"role_replaced: {written or '(missing)'} -> {role}")
    elif role_node is None or not written:
        raise AgentRequestError(f"missing; one of {', '.join(ROLES)}", header_line, "role")
    elif written not in ROLES:
        raise AgentRequestError(f"{role_node.value!r} is not one of {', '.join(ROLES)}", role_node.line, "role")
    else:
        role = written
    id_node = fields.get("request_id")
    if id_node is None or id_node.value in (None, ""):
        request_id = f"req-{uuid.uuid4().hex[:12]}"
        warnings.append("request_id_missing")
    elif isinstance(id_node.value, dict | list):
        raise AgentRequestError("must be a single value (a uuid or a number)", id_node.line, "request_id")
    else:
        request_id = str(id_node.value)
    needs_node = fields.get("needs")
    if needs_node is None:
        raise AgentRequestError("missing; list what you need as '- type: ...' entries", header_line, "needs")
    raw_needs: list[Located] = [] if needs_node.value is None else needs_node.value
    if not isinstance(raw_needs, list):
        raise AgentRequestError("must be a list of '- type: ...' entries", needs_node.line, "needs")
    needs: list[Need] = []
    errors: list[AgentRequestError] = []
    for i, item in enumerate(raw_needs):
        try:
            needs.append(_need(item, i))
        except AgentRequestError as exc:
            if not leniency.skip_bad_needs:
                raise
            errors.append(exc)
            warnings.append(f"need_skipped: {str(exc).removeprefix('AGENT_REQUEST ')}")
    if errors and not needs:
        raise errors[0]
    summary, constraints = _context(fields.get("context"))
    return AgentRequest(role, request_id, tuple(needs), summary, constraints, tuple(warnings))


def _need(item: Located, index: int) -> Need:
    field = f"needs[{index}]"
    if not isinstance(item.value, dict):
        raise AgentRequestError("must be a mapping with a 'type' (e.g. '- type: file.read')", item.line, field)
    params = {k: plain(v) for k, v in item.value.items()}
    kind = params.pop("type", None)
    if not isinstance(kind, str) or not kind:
        raise AgentRequestError("missing 'type'", item.line, f"{field}.type")
    if kind not in NEED_TYPES:
        raise AgentRequestError(f"unknown need type {kind!r}; supported: {', '.join(NEED_TYPES)}",
                                item.value["type"].line, f"{field}.type")
    try:
        checked = check_need(kind, params)
    except NeedSpecError as exc:
        node = item.value.get(exc.field)
        raise AgentRequestError(exc.reason, node.line if node else item.line, f"{field}.{exc.field}") from None
    return Need(kind, checked, index, item.line)


def _context(node: Located | None) -> tuple[str, tuple[str, ...]]:
    if node is None or node.value is None:
        return "", ()
    if isinstance(node.value, str):
        return node.value, ()
    if not isinstance(node.value, dict):
        raise AgentRequestError("must be a mapping with summary and constraints", node.line, "context")
    data = {k: plain(v) for k, v in node.value.items()}
    summary = data.get("summary") or ""
    raw = data.get("constraints") or []
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raise AgentRequestError("must be a list of strings", node.value["constraints"].line, "context.constraints")
    return str(summary), tuple(str(c) for c in raw)
