"""Just enough of llama.cpp's GBNF to test a grammar by its own text (issue 33): read the rules,
derive random texts from them (a hypothesis ``data`` object makes every choice), and turn a
non-recursive grammar into one Python regular expression that recognises the same language.

The subset: ``name ::= expr`` lines; alternatives ``|``; sequences; ``"literals"`` with ``\\n``,
``\\t``, ``\\r``, ``\\\\`` and ``\\"`` escapes; character classes ``[...]`` / ``[^...]`` with the
same escapes and ``a-z`` ranges; groups ``( ... )``; ``*``, ``+`` and ``?``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]"}


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Cls:
    chars: frozenset[str]
    ranges: tuple[tuple[str, str], ...]
    negated: bool

    def has(self, char: str) -> bool:
        inside = char in self.chars or any(lo <= char <= hi for lo, hi in self.ranges)
        return inside != self.negated


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Alt:
    options: tuple[Any, ...]


@dataclass(frozen=True)
class Seq:
    items: tuple[Any, ...]


@dataclass(frozen=True)
class Rep:
    item: Any
    low: int
    high: int | None


class _Reader:
    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def skip(self) -> None:
        while self.at < len(self.text) and self.text[self.at] == " ":
            self.at += 1

    def char(self) -> str:
        c = self.text[self.at]
        self.at += 1
        if c == "\\":
            c = ESCAPES[self.text[self.at]]
            self.at += 1
        return c

    def alt(self) -> Any:
        options = [self.seq()]
        while self.at < len(self.text) and self.text[self.at] == "|":
            self.at += 1
            options.append(self.seq())
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def seq(self) -> Any:
        items = []
        while True:
            self.skip()
            if self.at >= len(self.text) or self.text[self.at] in "|)":
                break
            items.append(self.suffixed())
        assert items, f"empty alternative at {self.at} of {self.text!r}"
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def suffixed(self) -> Any:
        atom = self.atom()
        if self.at < len(self.text) and self.text[self.at] in "*+?":
            op = self.text[self.at]
            self.at += 1
            return Rep(atom, 1 if op == "+" else 0, 1 if op == "?" else None)
        return atom

    def atom(self) -> Any:
        c = self.text[self.at]
        if c == '"':
            self.at += 1
            out = []
            while self.text[self.at] != '"':
                out.append(self.char())
            self.at += 1
            return Lit("".join(out))
        if c == "[":
            self.at += 1
            negated = self.text[self.at] == "^"
            self.at += negated
            chars, ranges = set(), []
            while self.text[self.at] != "]":
                first = self.char()
                if self.text[self.at] == "-" and self.text[self.at + 1] != "]":
                    self.at += 1
                    ranges.append((first, self.char()))
                else:
                    chars.add(first)
            self.at += 1
            return Cls(frozenset(chars), tuple(ranges), negated)
        if c == "(":
            self.at += 1
            inner = self.alt()
            self.skip()
            assert self.text[self.at] == ")"
            self.at += 1
            return inner
        name = re.match(r"[a-zA-Z0-9_-]+", self.text[self.at:])
        assert name, f"unexpected {c!r} at {self.at} of {self.text!r}"
        self.at += len(name.group())
        return Ref(name.group())


def read_grammar(text: str) -> dict[str, Any]:
    """Each rule's expression by name (one rule per line)."""
    rules = {}
    for line in text.splitlines():
        if line.strip():
            name, expr = line.split("::=", 1)
            rules[name.strip()] = _Reader(expr.strip()).alt()
    return rules


SAMPLE = ["a", "b", "Z", "0", " ", "\t", "\r", "`", "=", ">", "<", "/", ".", "-", "R", "E", "é", "\x0b", "\u2028",
          "\x85", "#", '"', "\\"]
"""Characters drawn for a class: the grammar's delimiters and separators among ordinary ones."""


def derive(rules: dict[str, Any], data: Any, node: Any = None, depth: int = 0) -> str:
    """One random text of the language of ``node`` (default: ``root``); ``data`` is hypothesis's."""
    import hypothesis.strategies as st

    node = rules["root"] if node is None else node
    if isinstance(node, Lit):
        return node.text
    if isinstance(node, Ref):
        return derive(rules, data, rules[node.name], depth + 1)
    if isinstance(node, Seq):
        return "".join(derive(rules, data, item, depth) for item in node.items)
    if isinstance(node, Alt):
        return derive(rules, data, data.draw(st.sampled_from(node.options)), depth)
    if isinstance(node, Rep):
        high = node.high if node.high is not None else node.low + 3
        count = data.draw(st.integers(node.low, high))
        return "".join(derive(rules, data, node.item, depth) for _ in range(count))
    assert isinstance(node, Cls)
    pool = [c for c in SAMPLE if node.has(c)]
    pool += [c for c, _ in node.ranges]
    return str(data.draw(st.sampled_from(pool)))


def to_regex(rules: dict[str, Any], node: Any = None) -> str:
    """A Python regular expression (no flags needed) of the language of ``node`` (default
    ``root``); the grammar must not be recursive."""
    node = rules["root"] if node is None else node
    if isinstance(node, Lit):
        return re.escape(node.text)
    if isinstance(node, Ref):
        return f"(?:{to_regex(rules, rules[node.name])})"
    if isinstance(node, Seq):
        return "".join(f"(?:{to_regex(rules, item)})" for item in node.items)
    if isinstance(node, Alt):
        return "|".join(f"(?:{to_regex(rules, option)})" for option in node.options)
    if isinstance(node, Rep):
        suffix = {(0, None): "*", (1, None): "+", (0, 1): "?"}[(node.low, node.high)]
        return f"(?:{to_regex(rules, node.item)}){suffix}"
    assert isinstance(node, Cls)
    inside = "".join(re.escape(c) for c in sorted(node.chars))
    inside += "".join(f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in node.ranges)
    return f"[{'^' if node.negated else ''}{inside}]"
