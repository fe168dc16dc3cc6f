"""The inbox tag parser (relay spec, "Inbox Format" and "Parsing Rules").

Rules, as the spec states them, with the choices it leaves open:

1. An opening tag is ``[NAME`` for one of the seven command names, at the start of a
   trimmed line, followed by whitespace or ``]``. Anything else (``[link](url)``,
   ``[NOTE]``, a tag in the middle of a line) is text and ignored.
2. Attributes are ``key="value"`` pairs (``'value'`` and bare ``value`` are accepted too);
   unknown attributes are ignored.
3. A body runs from the line after the opening tag up to the first line that, trimmed, is
   exactly ``[/NAME]``. It is kept verbatim: indentation, blank lines, ``\\r\\n`` endings,
   and opening tags of other commands inside it are all body text.
4. ``[MESSAGE]text[/MESSAGE]`` on one line is accepted; text after the ``]`` of an opening
   tag otherwise becomes the first body line.
5. ``DELETE_FILE`` and ``READ_FILE`` have no body; a stray ``[/READ_FILE]`` is ignored text.
6. A malformed block (missing attribute, non-integer line number, no closing tag, no
   ``]``) becomes a :class:`ParseError` in its place and parsing goes on after its
   opening line, so the model learns about every mistake at once.

The parser never raises on any ``str`` and runs in time linear in the input: it looks
for opening tags with one compiled pattern and for closing tags with ``str.find``, and
remembers which closing tags do not occur at all.
"""

from __future__ import annotations

import re

from codeloop.relay import commands as c
from codeloop.tools.text_endings import strip_ending

_ATTR = re.compile(r"""([A-Za-z_][\w-]*)[^\S\n]*=[^\S\n]*(?:"([^"]*)"|'([^']*)'|([^\s\]"']+))""")
# An opening tag: group 1 the name; group 2 a well-formed attribute list when the tag is
# closed by "]" on its line (possessive, so hostile lines cannot make it backtrack), else
# None and _parse_attributes explains what is wrong; group 3 the rest of the line.
_OPEN = re.compile(
    r"\[(" + "|".join(c.COMMAND_NAMES) + r")(?=[\s\]]|\Z)"
    r"""(?:((?:\s+[A-Za-z_][\w-]*+\s*=\s*(?:"[^"\n]*+"|'[^'\n]*+'|[^\s\]"']++))*+)\s*\])?"""
    r"([^\n]*)"
)
_CLOSING = {name: f"[/{name}]" for name in c.COMMAND_NAMES}

SYNTAX: dict[str, str] = {
    "CREATE_FILE": '[CREATE_FILE path="relative/path"] ... [/CREATE_FILE]',
    "EDIT_FILE": '[EDIT_FILE path="relative/path" start_line="N" end_line="M"] ... [/EDIT_FILE]',
    "DELETE_FILE": '[DELETE_FILE path="relative/path"]',
    "READ_FILE": '[READ_FILE path="relative/path"]',
    "RUN_COMMAND": "[RUN_COMMAND] command [/RUN_COMMAND]",
    "MESSAGE": "[MESSAGE] text [/MESSAGE]",
    "DONE": "[DONE] summary [/DONE]",
}
"""One-line syntax reminder per command, quoted in parse error messages."""


def _parse_attributes(name: str, tag_rest: str) -> tuple[dict[str, str], str] | str:
    """Attributes of an opening tag and the text after its ``]``, or an error message."""
    attrs: dict[str, str] = {}
    pos, end = 0, len(tag_rest)
    while True:
        while pos < end and tag_rest[pos].isspace():
            pos += 1
        if pos >= end:
            return f"the opening tag [{name} has no closing ']' on its line; write {SYNTAX[name]}"
        if tag_rest[pos] == "]":
            return attrs, tag_rest[pos + 1 :]
        m = _ATTR.match(tag_rest, pos)
        if m is None:
            return (f"cannot read the attributes of [{name} ...] near {tag_rest[pos : pos + 20]!r}; "
                    f'write them as key="value": {SYNTAX[name]}')
        attrs[m.group(1)] = next(value for value in m.groups()[1:] if value is not None)
        pos = m.end()


def _required(name: str, attrs: dict[str, str], key: str) -> str:
    value = attrs.get(key)
    if value is None or not value.strip():
        what = "missing" if value is None else "empty"
        raise _BlockError(f"{what} required attribute {key}; write {SYNTAX[name]}")
    return value


def _line_number(name: str, attrs: dict[str, str], key: str) -> int:
    raw = _required(name, attrs, key).strip()
    if not (raw.isascii() and raw.isdigit()):
        raise _BlockError(f'{key} must be a whole line number like "12", got {raw!r}')
    return int(raw)


class _BlockError(Exception):
    """Internal: one block is malformed; becomes a ParseError value."""


def _build_self_closing(name: str, attrs: dict[str, str], line: int) -> c.RelayCommand:
    path = _required(name, attrs, "path")
    if name == "DELETE_FILE":
        return c.DeleteFile(path, line=line)
    return c.ReadFile(path, line=line)


def _build_with_body(name: str, attrs: dict[str, str], body: str, line: int) -> c.RelayCommand:
    if name == "CREATE_FILE":
        return c.CreateFile(_required(name, attrs, "path"), body, line=line)
    if name == "EDIT_FILE":
        path = _required(name, attrs, "path")
        start, end = _line_number(name, attrs, "start_line"), _line_number(name, attrs, "end_line")
        return c.EditFile(path, start, end, body, line=line)
    text = strip_ending(body)
    if name == "RUN_COMMAND":
        if not text.strip():
            raise _BlockError("the command is empty; put the shell command between [RUN_COMMAND] and "
                              "[/RUN_COMMAND]")
        return c.RunCommand(text, line=line)
    if name == "MESSAGE":
        return c.Message(text, line=line)
    return c.Done(text, line=line)


def _find_closing(text: str, tag: str, start: int) -> tuple[int, int] | None:
    """(start of the closing line, end of it without its newline) of the first line at or
    after ``start`` (a line start) that, trimmed, is exactly ``tag``; None if there is none."""
    pos = start
    while True:
        i = text.find(tag, pos)
        if i < 0:
            return None
        line_start = text.rfind("\n", 0, i) + 1
        line_end = text.find("\n", i)
        if line_end < 0:
            line_end = len(text)
        if not text[line_start:i].strip() and not text[i + len(tag) : line_end].strip():
            return line_start, line_end
        pos = i + 1


def parse_inbox(text: str) -> list[c.RelayCommand]:
    """Parse one inbox file into commands in order of appearance (spec "Parsing Rules").

    Never raises; malformed blocks come back as :class:`ParseError` values. Text outside
    blocks is ignored. A leading byte-order mark is ignored.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    commands: list[c.RelayCommand] = []
    absent: set[str] = set()
    pos = 0
    counted_to, line_at = 0, 1
    while (m := _OPEN.search(text, pos)) is not None:
        start = m.start()
        line_start = text.rfind("\n", 0, start) + 1
        if line_start != start and text[line_start:start].strip():
            pos = m.end()
            continue
        name, attr_text, rest = m.groups()
        next_line = m.end() + 1
        line_at += text.count("\n", counted_to, line_start)
        counted_to = line_start
        line = line_at
        pos = next_line
        if attr_text is None:
            parsed = _parse_attributes(name, rest)
            if isinstance(parsed, str):
                commands.append(c.ParseError(name, parsed, line=line))
                continue
            attrs, rest = parsed
        else:
            attrs = {k: dq or sq or bare for k, dq, sq, bare in _ATTR.findall(attr_text)} if attr_text else {}
        try:
            if name in c.SELF_CLOSING:
                commands.append(_build_self_closing(name, attrs, line))
                continue
            closing = _CLOSING[name]
            inline = rest.strip()
            if inline.endswith(closing):
                body = inline[: -len(closing)].strip()
                if name in ("CREATE_FILE", "EDIT_FILE") and body:
                    body += "\n"
            else:
                found = None if name in absent else _find_closing(text, closing, next_line)
                if found is None:
                    absent.add(name)
                    raise _BlockError(f"[{name}] opened on line {line} is never closed; end its body with a "
                                      f"line holding only {closing}")
                close_start, close_end = found
                body = text[next_line:close_start]
                if inline:
                    body = rest.lstrip() + "\n" + body
                pos = close_end + 1
            commands.append(_build_with_body(name, attrs, body, line))
        except _BlockError as exc:
            commands.append(c.ParseError(name, str(exc), line=line))
    return commands
