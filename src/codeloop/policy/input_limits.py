"""Limits on untrusted JSON, checked before it is parsed (issue 22, class 7; docs/security.md).

Python's JSON decoder recurses once per nesting level, so a body of ``[[[[...`` raises
``RecursionError`` (a traceback, an HTTP 500) long before any size limit. And JSON's
``\\ud800`` escape yields a lone UTF-16 surrogate: a ``str`` that cannot be written as UTF-8.
:func:`loads_limited` refuses both, and sizes over a limit, with :class:`InputLimitError`
naming what is wrong and where.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects accepted (the spaces protocol needs 5)."""
MAX_NUMBER_DIGITS = 100
"""Longest integer accepted in untrusted JSON: no field of any protocol needs more, and
Python refuses to convert over 4300 digits with a ValueError that is not a JSON error."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class InputLimitError(ValueError):
    """Input over a limit, or text that cannot be encoded; the message names it and the fix."""


def json_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in ``text``, outside JSON strings."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


def check_json_depth(text: str, what: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """InputLimitError when ``text`` nests deeper than ``max_depth``."""
    if json_depth(text) > max_depth:
        raise InputLimitError(f"{what} nests arrays/objects deeper than {max_depth} levels; "
                              "send a flatter document")


def unencodable_field(value: Any) -> str | None:
    """The path (``operations[0].content``) of the first string in ``value``, key or value,
    that cannot be encoded as UTF-8 (a lone surrogate), or ``None``."""
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path or "(the value)"
        elif isinstance(item, dict):
            for key, child in item.items():
                name = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"{path}[key {key.encode('utf-8', 'backslashreplace').decode()}]"
                pending.append((name, child))
        elif isinstance(item, list | tuple):
            pending.extend((f"{path}[{i}]", child) for i, child in enumerate(item))
    return None


def check_encodable(value: Any, what: str) -> None:
    """InputLimitError naming the field of ``value`` that holds a lone surrogate."""
    field = unencodable_field(value)
    if field is not None:
        raise InputLimitError(f"{what}: field {field} holds text that cannot be encoded as UTF-8 "
                              "(a lone UTF-16 surrogate such as \\ud800); send valid Unicode text, "
                              "or base64 for binary content")


def loads_limited(text: str | bytes, what: str, *, max_bytes: int | None = None,
                  max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` of untrusted ``text`` after checking its size and depth, and its strings
    after. Raises InputLimitError, or ValueError (``json.JSONDecodeError``,
    ``UnicodeDecodeError``) for text that is not JSON."""
    if max_bytes is not None and len(text) > max_bytes:
        raise InputLimitError(f"{what} is {len(text)} bytes, over the {max_bytes}-byte limit")
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    check_json_depth(text, what, max_depth)

    def bounded_int(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_NUMBER_DIGITS:
            raise InputLimitError(f"{what} holds a number of {len(digits.lstrip('-'))} digits, over the "
                                  f"{MAX_NUMBER_DIGITS}-digit limit; send a number in the field's range")
        return int(digits)

    value = json.loads(text, parse_int=bounded_int)
    check_encodable(value, what)
    return value
