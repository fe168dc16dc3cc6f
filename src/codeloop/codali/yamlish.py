"""The YAML-like text of the codali protocol: a small, strict, line-tracking subset.

Parsing (requests from models): block mappings (``key: value``, ``key:`` + nested
block), block lists (``- item``, ``- key: value`` starting a mapping item, lists at the
same indent as their key), scalars (``"json-style"``, ``'single'``, integers, ``true``,
``false``, ``null``, plain text), ``|``/``>`` block scalars, flow lists (``[a, "b"]``)
and ``#`` comments. Every value remembers its line, so errors can name the line and
field. Anchors, tags and flow mappings are not part of the protocol and are rejected.

Rendering (responses to models): the same subset; multi-line text becomes a ``|``
block, so file contents stay readable.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_KEY = re.compile(r"^([A-Za-z_][\w.\-]*)\s*:(?:\s+(.*))?$")
_INT = re.compile(r"^[-+]?\d+$")


class YamlishError(ValueError):
    """Malformed protocol text; ``line`` is 1-based in the text that was parsed."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Located:
    """A parsed value and the line it started on."""

    value: Any
    """``dict[str, Located]``, ``list[Located]`` or a scalar (str, int, bool, None)."""
    line: int
    """1-based line number."""


@dataclass(frozen=True)
class _Line:
    indent: int
    text: str
    number: int


def _strip_comment(text: str) -> str:
    quote = ""
    for i, char in enumerate(text):
        if quote:
            if char == "\\" and quote == '"':
                continue
            if char == quote and (quote != '"' or text[i - 1] != "\\"):
                quote = ""
        elif char in "\"'" and (i == 0 or text[i - 1] in " :[,-"):
            quote = char
        elif char == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text


def _lines(text: str, first_line: int) -> list[_Line]:
    out = []
    for offset, raw in enumerate(text.split("\n")):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise YamlishError("tab in indentation; indent with spaces", first_line + offset)
        content = _strip_comment(raw.strip())
        if content:
            out.append(_Line(len(raw) - len(raw.lstrip(" ")), content, first_line + offset))
    return out


def parse_scalar(text: str, line: int) -> Any:
    """One scalar or flow list as written after ``key:`` or ``-``."""
    text = text.strip()
    if text.startswith('"'):
        try:
            value, end = json.JSONDecoder().raw_decode(text)
        except json.JSONDecodeError as exc:
            raise YamlishError(f"unterminated or invalid double-quoted string: {exc.msg}", line) from None
        if text[end:].strip():
            raise YamlishError(f"unexpected text after quoted string: {text[end:].strip()!r}", line)
        return value
    if text.startswith("'"):
        if len(text) < 2 or not text.endswith("'"):
            raise YamlishError("unterminated single-quoted string", line)
        return text[1:-1].replace("''", "'")
    if text.startswith("["):
        return _flow_list(text, line)
    if text.startswith(("{", "&", "*", "!", "|", ">")) and text not in _BLOCK_HEADERS:
        raise YamlishError(f"unsupported YAML syntax {text[:1]!r}; write plain values, quoted strings or "
                           "'- item' lists", line)
    lowered = text.lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    if lowered in {"null", "~"}:
        return None
    if _INT.match(text):
        return int(text)
    return text


def _flow_list(text: str, line: int) -> list[Any]:
    if not text.endswith("]"):
        raise YamlishError("unterminated flow list: missing ']'", line)
    inner = text[1:-1].strip()
    if not inner:
        return []
    try:
        parsed = json.loads(text)
        if isinstance(parsed, list):
            return parsed
    except (json.JSONDecodeError, RecursionError):  # read item by item below
        pass
    items, current, quote = [], "", ""
    for char in inner:
        if quote:
            current += char
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
            current += char
        elif char == ",":
            items.append(current)
            current = ""
        else:
            current += char
    if quote:
        raise YamlishError("unterminated string in flow list", line)
    items.append(current)
    return [parse_scalar(item, line) for item in items if item.strip()]


_BLOCK_HEADERS = frozenset({"|", "|-", "|+", ">", ">-", ">+"})


class _Parser:
    def __init__(self, lines: list[_Line], raw: list[str], first_line: int) -> None:
        self.lines = lines
        self.raw = raw
        self.first_line = first_line
        self.i = 0

    def block_scalar(self, header: str, line: _Line, parent_indent: int) -> str:
        """The text of a ``|``/``>`` block that follows ``line`` (lines indented deeper)."""
        j = line.number - self.first_line + 1
        collected: list[str] = []
        while j < len(self.raw):
            text = self.raw[j]
            if text.strip() and len(text) - len(text.lstrip(" ")) <= parent_indent:
                break
            collected.append(text)
            j += 1
        last_number = self.first_line + j - 1
        while self.i < len(self.lines) and self.lines[self.i].number <= last_number:
            self.i += 1
        while collected and not collected[-1].strip():
            collected.pop()
        indent = min((len(t) - len(t.lstrip(" ")) for t in collected if t.strip()), default=0)
        body = [t[indent:] if t.strip() else "" for t in collected]
        text = (" " if header.startswith(">") else "\n").join(body)
        if header.endswith("-") or not body:
            return text
        return text + "\n"

    def block(self, indent: int) -> Located:
        line = self.lines[self.i]
        if line.indent != indent:
            raise YamlishError("unexpected indentation", line.number)
        if line.text == "-" or line.text.startswith("- "):
            return self.sequence(indent)
        return self.mapping(indent, None)

    def mapping(self, indent: int, first: _Line | None) -> Located:
        result: dict[str, Located] = {}
        start = (first or self.lines[self.i]).number
        while True:
            if first is not None:
                line, first = first, None  # already consumed by the caller (the "- key: v" line)
            elif self.i < len(self.lines) and self.lines[self.i].indent == indent:
                line = self.lines[self.i]
                if line.text == "-" or line.text.startswith("- "):
                    raise YamlishError("list item where a 'key: value' line was expected", line.number)
                self.i += 1
            else:
                break
            match = _KEY.match(line.text)
            if not match:
                raise YamlishError(f"expected 'key: value', got {line.text[:60]!r}", line.number)
            key, rest = match.group(1), match.group(2)
            if key in result:
                raise YamlishError(f"duplicate key {key!r}", line.number)
            if rest in _BLOCK_HEADERS:
                result[key] = Located(self.block_scalar(rest, line, indent), line.number)
            elif rest:
                result[key] = located(parse_scalar(rest, line.number), line.number)
            elif self.i < len(self.lines) and self.lines[self.i].indent > indent:
                result[key] = self.block(self.lines[self.i].indent)
            elif (self.i < len(self.lines) and self.lines[self.i].indent == indent
                  and (self.lines[self.i].text == "-" or self.lines[self.i].text.startswith("- "))):
                result[key] = self.sequence(indent)
            else:
                result[key] = Located(None, line.number)
        if self.i < len(self.lines) and self.lines[self.i].indent > indent:
            raise YamlishError("unexpected indentation", self.lines[self.i].number)
        return Located(result, start)

    def sequence(self, indent: int) -> Located:
        items: list[Located] = []
        start = self.lines[self.i].number
        while self.i < len(self.lines) and self.lines[self.i].indent == indent:
            line = self.lines[self.i]
            if not (line.text == "-" or line.text.startswith("- ")):
                break
            rest = line.text[1:].lstrip()
            self.i += 1
            if not rest:
                if self.i < len(self.lines) and self.lines[self.i].indent > indent:
                    items.append(self.block(self.lines[self.i].indent))
                else:
                    items.append(Located(None, line.number))
            elif _KEY.match(rest) and not rest.startswith(("'", '"')):
                column = indent + len(line.text) - len(rest)
                items.append(self.mapping(column, _Line(column, rest, line.number)))
            else:
                items.append(located(parse_scalar(rest, line.number), line.number))
        if self.i < len(self.lines) and self.lines[self.i].indent > indent:
            raise YamlishError("unexpected indentation", self.lines[self.i].number)
        return Located(items, start)


def located(value: Any, line: int) -> Located:
    """Wrap a scalar or flow list (whose items are plain values) so every level has a line."""
    if isinstance(value, list):
        return Located([located(v, line) for v in value], line)
    if isinstance(value, dict):
        return Located({str(k): located(v, line) for k, v in value.items()}, line)
    return Located(value, line)


def parse_block(text: str, first_line: int = 1) -> Located:
    """Parse a block of protocol text; ``first_line`` numbers its first line for errors."""
    lines = _lines(text, first_line)
    if not lines:
        return Located({}, first_line)
    parser = _Parser(lines, text.split("\n"), first_line)
    result = parser.block(lines[0].indent)
    if parser.i < len(lines):
        raise YamlishError(f"unexpected line {lines[parser.i].text[:60]!r} (check its indentation)",
                           lines[parser.i].number)
    return result


def plain(value: Located) -> Any:
    """The value without line information."""
    inner = value.value
    if isinstance(inner, dict):
        return {k: plain(v) for k, v in inner.items()}
    if isinstance(inner, list):
        return [plain(v) for v in inner]
    return inner


# Rendering ----------------------------------------------------------------------------

def _render_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


def _block_scalar(text: str) -> str | None:
    """The ``|`` header for ``text`` when it can be a literal block, else ``None``."""
    if "\n" not in text.rstrip("\n") or text.startswith((" ", "\n")) or "\r" in text or "\t" in text[:1]:
        return None
    if text.endswith("\n\n"):
        return None
    return "|" if text.endswith("\n") else "|-"


def render(value: Any, indent: int = 0) -> list[str]:
    """Lines of ``value`` (dict or list) in protocol form."""
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_render_entry(f"{pad}{key}:", item, indent))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                sub = render(item, indent + 2)
                out.append(f"{pad}- {sub[0].lstrip()}")
                out.extend(sub[1:])
            elif isinstance(item, list) and item:
                out.append(f"{pad}-")
                out.extend(render(item, indent + 2))
            else:
                out.append(f"{pad}- {_render_scalar(item) if item not in ({}, []) else json.dumps(item)}")
    return out


def _render_entry(prefix: str, item: Any, indent: int) -> list[str]:
    if isinstance(item, dict | list) and item:
        return [prefix, *render(item, indent + 2)]
    if isinstance(item, dict | list):
        return [f"{prefix} {json.dumps(item)}"]
    if isinstance(item, str):
        header = _block_scalar(item)
        if header:
            body_pad = " " * (indent + 2)
            body = item[:-1] if item.endswith("\n") else item
            return [f"{prefix} {header}", *[(body_pad + line) if line else "" for line in body.split("\n")]]
    return [f"{prefix} {_render_scalar(item)}"]
