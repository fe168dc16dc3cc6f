"""What new content a small model gives for a file means as a tool call (issue 20).

A model that shows a file's new content (a fenced block under the file's name, or a call to
a "tool" named after the file) means one of three things, decided here from the file as it
is in the workspace and from the definitions of both texts (tree-sitter symbols,
:mod:`codeloop.index.symbols`):

- the file does not exist: create it (``write_file``);
- the block holds only definitions (functions, classes; imports and comments aside) and
  names at least one definition of the file: replace those definitions, add the new ones
  after them and the missing imports after the file's imports, keep everything else: one
  ``edit_file`` of the lines that differ;
- the block holds every definition of the file (or the file has none): it is the whole new
  file (``write_file``, with its read-before-write check).

Anything else (a block that drops definitions of the file and is not just definitions) is
ambiguous: nothing is changed and the model is told the exact calls that would. The calls
made here run through the pipeline like any other (policy, approval, checkpoints, events).
"""

from __future__ import annotations

import ast
import itertools
import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codeloop.agent.call_forms import CallForms
from codeloop.environments.base import ExecutionEnvironment
from codeloop.tools.edit import EDIT_FILE
from codeloop.tools.files import WRITE_FILE

_IMPORT = re.compile(r"^\s*(?:import\s|from\s+\S+\s+import\s|use\s|#include\s|using\s|package\s|require\s*\()")
_COMMENT = re.compile(r"^\s*(?:#(?!include\b)|//|/\*|\*|--\s)")
_DEFINITION_KINDS = frozenset({"function", "method", "class", "struct", "interface", "enum", "trait", "impl"})


@dataclass(frozen=True)
class Definition:
    """A definition's lines in a text (0-based, ``end`` exclusive, decorators included)."""

    name: str
    start: int
    end: int
    top: bool
    """Not nested in another definition."""


@dataclass(frozen=True)
class EditPlan:
    """The calls that make the change, or why there is none."""

    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    """``(tool, arguments)`` in order; empty with no ``problem``: the file already holds it."""
    problem: str = ""
    """Why the content was not taken as a change, with the exact calls that would make one."""


def definitions(path: str, text: str) -> list[Definition] | None:
    """The definitions of ``text`` read as the language of ``path``; None when that language
    has no parser (a data or text file)."""
    from codeloop.index.languages import language_for, parse, parser
    from codeloop.index.symbols import extract_symbols

    language = language_for(path)
    ts_parser = parser(language) if language else None
    if language is None or ts_parser is None:
        return None
    lines = text.split("\n")
    found = []
    for symbol in extract_symbols(path, language, parse(ts_parser, language, text.encode())):
        if symbol.kind not in _DEFINITION_KINDS:
            continue
        start = symbol.start_line - 1
        while start > 0 and lines[start - 1].lstrip().startswith("@"):
            start -= 1
        found.append(Definition(symbol.name, start, symbol.end_line, "." not in symbol.qualified_name))
    return found


def lines_of(text: str) -> list[str]:
    """``text`` cut after each ``\n`` only (tree-sitter's rows; ``splitlines`` also cuts at
    form feeds and other separators)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def content_problem(path: str, text: str) -> str | None:
    """Why ``text`` cannot be the content of ``path`` as its language (a ``.py``/``.pyi`` file
    that does not parse, a ``.json`` one that does not load), None when it can or the file is
    of another kind."""
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    try:
        if suffix in ("py", "pyi"):
            ast.parse(text)
        elif suffix == "json":
            json.loads(text)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        return f"line {exc.lineno}: {exc.msg}" + (f" (`{line[:60]}`)" if line else "")
    except (ValueError, RecursionError, MemoryError) as exc:
        return str(exc) or type(exc).__name__
    return None


def plausible_content(path: str, content: str) -> bool:
    """False when ``content`` cannot be the file's text (not Python for a ``.py`` file, not JSON
    for a ``.json`` one): a traceback or a shell session under a file's name is no edit."""
    return content_problem(path, content) is None and bool(content.strip())


def edit_between(old: str, new: str) -> tuple[str, str]:
    """``(old_string, new_string)`` for an edit turning ``old`` into ``new``: the lines that
    differ, widened by a line of context at a time until ``old_string`` is unique in ``old``."""
    a, b = lines_of(old), lines_of(new)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    while True:
        old_part, new_part = "".join(a[head:len(a) - tail]), "".join(b[head:len(b) - tail])
        if (old_part and old.count(old_part) == 1) or (head == 0 and tail == 0):
            return old_part, new_part
        if head > 0:
            head -= 1
        else:
            tail -= 1


def _is_rest(line: str) -> bool:
    return not line.strip() or bool(_COMMENT.match(line) or _IMPORT.match(line))


def _indented(text: str, indent: str) -> str:
    return "".join(indent + line if line.strip() else line for line in lines_of(text))


def _only_definitions(path: str, new: str) -> tuple[list[Definition], list[str], list[str]] | None:
    """The top-level definitions of ``new`` (dedented), its lines, and its lines outside them;
    None unless it has definitions and the lines outside them are imports, comments or blank."""
    lines = lines_of(textwrap.dedent(new))
    tops = [d for d in definitions(path, "".join(lines)) or () if d.top]
    inside = {i for d in tops for i in range(d.start, d.end)}
    rest = [line for i, line in enumerate(lines) if i not in inside]
    if not tops or not all(map(_is_rest, rest)):
        return None
    return tops, lines, rest


def merged_definitions(path: str, old: str, new: str) -> str | None:
    """``old`` with the definitions ``new`` redefines replaced, its new definitions added after
    the last replaced one and its missing imports added after ``old``'s; None unless ``new``
    holds only definitions (imports and comments aside), at least one of them in ``old``,
    each matching one definition there."""
    old_defs, only = definitions(path, old), _only_definitions(path, new)
    if not old_defs or only is None:
        return None
    tops, lines, rest = only
    old_lines = lines_of(old)
    replaced: list[tuple[Definition, str]] = []
    added: list[str] = []
    for d in tops:
        text = "".join(lines[d.start:d.end])
        named = [o for o in old_defs if o.name == d.name]
        matches = [o for o in named if o.top] or named
        if len(matches) > 1:
            return None
        if matches:
            target = matches[0]
            first = old_lines[target.start] if target.start < len(old_lines) else ""
            indent = first[:len(first) - len(first.lstrip(" \t"))]
            replaced.append((target, _indented(text, indent)))
        else:
            added.append(text)
    spans = sorted((o.start, o.end) for o, _ in replaced)
    if not replaced or any(start < end for (_, end), (start, _) in itertools.pairwise(spans)):
        return None  # nothing redefined, or a class and one of its methods both redefined
    if added and not all(o.top for o, _ in replaced):
        return None  # new functions next to a redefined method: where they go is a guess
    return _splice(old_lines, replaced, added, [line for line in rest if _IMPORT.match(line)])


def appended_definitions(path: str, old: str, new: str) -> str | None:
    """``old`` with the definitions of ``new`` added at its end and ``new``'s missing imports
    after ``old``'s; None unless ``new`` holds only definitions (imports and comments aside)
    and none of them is in ``old``. For a function asked to be *added*: a block of new
    definitions alone is otherwise ambiguous (it may mean the whole new file)."""
    old_defs, only = definitions(path, old), _only_definitions(path, new)
    if old_defs is None or only is None or {d.name for d in only[0]} & {d.name for d in old_defs}:
        return None
    tops, lines, rest = only
    old_lines = lines_of(old)
    present = {line.strip() for line in old_lines}
    imports = list(dict.fromkeys(line if line.endswith("\n") else line + "\n" for line in rest
                                 if _IMPORT.match(line) and line.strip() not in present))
    added = ["".join(lines[d.start:d.end]) for d in tops]
    text = old.rstrip("\n") + "".join("\n\n\n" + a.rstrip("\n") for a in added) + "\n"
    if not old.strip():
        text = "\n\n\n".join(a.rstrip("\n") for a in added) + "\n"
    if imports:
        out = lines_of(text)
        after = [i for i, line in enumerate(old_lines) if _IMPORT.match(line) and not line[:1].isspace()]
        at = after[-1] + 1 if after else 0
        out[at:at] = imports
        text = "".join(out)
    return text


def _splice(old_lines: list[str], replaced: list[tuple[Definition, str]], added: list[str],
            imports: list[str]) -> str:
    if old_lines and not old_lines[-1].endswith("\n"):
        old_lines = [*old_lines[:-1], old_lines[-1] + "\n"]
    out = list(old_lines)
    last = max(o.end for o, _ in replaced)
    for target, text in sorted(replaced, key=lambda item: -item[0].start):
        piece = text if text.endswith("\n") else text + "\n"
        if target.end == last and added:
            piece += "".join("\n\n" + (a if a.endswith("\n") else a + "\n") for a in added)
        out[target.start:target.end] = [piece]
    present = {line.strip() for line in old_lines}
    missing = list(dict.fromkeys(line if line.endswith("\n") else line + "\n"
                                 for line in imports if line.strip() not in present))
    if missing:
        first_def = min(o.start for o, _ in replaced)
        after = [i for i, line in enumerate(old_lines[:first_def]) if _IMPORT.match(line) and not line[:1].isspace()]
        at = after[-1] + 1 if after else 0
        out[at:at] = missing
    return "".join(out)


async def plan_file_edit(path: str, content: str, env: ExecutionEnvironment, schemas: Mapping[str, Any],
                         forms: CallForms) -> EditPlan:
    """The calls that give ``path`` the ``content`` a model showed for it (module docstring)."""
    try:
        exists = await env.file_exists(path) and not (await env.stat(path)).is_dir
        old = await env.read_file(path) if exists else None
    except Exception:  # outside the workspace, unreadable: the pipeline says why when it writes
        old = None
    if old is None:
        return _calls(schemas, (WRITE_FILE, {"file_path": path, "content": content}))
    if old.rstrip("\n") == content.rstrip("\n"):
        return EditPlan()
    merged = merged_definitions(path, old, content)
    if merged is not None and merged != old:
        if EDIT_FILE in schemas:
            old_string, new_string = edit_between(old, merged)
            return _calls(schemas, (EDIT_FILE, {"file_path": path, "old_string": old_string,
                                                   "new_string": new_string}))
        return _calls(schemas, (WRITE_FILE, {"file_path": path, "content": merged}))
    if merged == old:
        return EditPlan()
    old_defs, new_defs = definitions(path, old), definitions(path, content)
    dropped = _dropped(old_defs or [], new_defs or [])
    if not dropped:
        return _calls(schemas, (WRITE_FILE, {"file_path": path, "content": content}))
    return EditPlan(problem=_ambiguous(path, dropped, forms))


def _dropped(old_defs: Sequence[Definition], new_defs: Sequence[Definition]) -> list[str]:
    kept = {d.name for d in new_defs}
    return list(dict.fromkeys(d.name for d in old_defs if d.top and d.name not in kept))


def _calls(schemas: Mapping[str, Any], *calls: tuple[str, dict[str, Any]]) -> EditPlan:
    missing = [name for name, _ in calls if name not in schemas]
    if missing:
        return EditPlan(problem=f"This session has no {missing[0]} tool to apply the content shown.")
    return EditPlan(tuple(calls))


def _ambiguous(path: str, dropped: list[str], forms: CallForms) -> str:
    names = ", ".join(f"`{name}`" for name in dropped[:5])
    lines = [f"The code shown for {path} was not applied: it leaves out {names}, which {path} defines, "
             "so it is neither the whole file nor just the definitions to replace."]
    if WRITE_FILE in forms.schemas:
        lines += ["To replace the whole file, write all of it, e.g.:",
                  forms.spell(WRITE_FILE, {"file_path": path, "content": "THE WHOLE NEW FILE"})]
    if EDIT_FILE in forms.schemas:
        lines += ["To change one part, show only the functions you change under the file's name, or:",
                  forms.spell(EDIT_FILE, {"file_path": path, "old_string": "OLD TEXT", "new_string": "NEW TEXT"})]
    return "\n".join(lines)
