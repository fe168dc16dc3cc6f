"""Diagnostics after edits (issue 21; docs/tools.md "Diagnostics after edits").

After a call whose tool declares it writes the files it names (``write_file``, ``edit_file``,
``apply_patch``: ``codeloop.tools.effects``) changed a source file, the agent's result
says where the edit broke its syntax, so a model (a small one most of all) fixes it in the next
call instead of finding out from a failing test three calls later:

- **Syntax**: the new file is parsed with the tree-sitter grammar of its language (the index's,
  :mod:`codeloop.index.languages`: Python, JS/TS, Go, Rust, Java, C/C++, Bash); Python files are
  also compiled with ``compile()``, whose message is the most precise one and which decides
  whether a Python file is broken (the grammar accepts some invalid Python and lacks some new
  syntax). Only errors the edit introduced are reported: a file that did not parse before the
  edit gets nothing (which of its errors are new cannot be told, and the edit may be a step of
  a repair); a new file is judged as it is. At most :data:`MAX_PROBLEMS` problems, each with
  line, column, what is wrong and the line's text.
- **Commands** (opt-in, ``diagnostics = ["ruff check --quiet {file}"]`` in the config files):
  each runs after each such edit through the environment's command runner, like the shell tool
  (``workspace_ops.run_command``: the sandbox, its timeout with the whole process tree killed,
  the filtered environment); ``{file}`` becomes the shell-quoted path. Its output (capped) is
  appended when it printed something or exited non-zero; a command that times out, is killed
  or cannot start is a warning for the user, never a failed call.

A clean edit's result stays byte-identical. This is a step of the one tool pipeline (its WATCH
step, :data:`codeloop.tools.pipeline.Watch`) that only the agent's ``Session`` passes: relay,
spaces and ``codeloop tool`` texts are their specs' and get none of it.
"""

from __future__ import annotations

import fnmatch
import shlex
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from codeloop.environments.errors import WorkspaceError
from codeloop.index.languages import language_for
from codeloop.policy.approval import ToolCallRequest
from codeloop.tools.effects import Effect, call_paths
from codeloop.tools.registry import ToolOutput
from codeloop.tools.truncation import truncate_output
from codeloop.tools.workspace_ops import run_command

if TYPE_CHECKING:
    from tree_sitter import Node

    from codeloop.environments.base import ExecutionEnvironment
    from codeloop.tools.pipeline import AfterCall

"""The tools whose calls are checked (by these names: an MCP tool is never one of them)."""
MAX_PROBLEMS = 3
"""Syntax problems reported per file; more are counted."""
MAX_PARSE_BYTES = 1_000_000
"""Larger files are not parsed (the check must stay cheap)."""
COMMAND_OUTPUT_LIMIT = 600
"""Characters of a diagnostics command's output kept (head and tail around a marker), so that
its block fits in write_file's 1,000-character result (loop spec §5.2)."""
DEFAULT_DIAGNOSTIC_TIMEOUT = 30.0
"""Seconds a diagnostics command may run before its process tree is killed."""
_TEXT_LIMIT = 120
"""Characters of a line's text shown beside a problem."""
_OPENERS = {"(": ")", "[": "]", "{": "}"}

Warn = Callable[[str], None]


@dataclass(frozen=True)
class Problem:
    """One syntax problem: 1-based line and column (in characters), what is wrong, the line."""

    line: int
    column: int
    message: str
    text: str = ""


@dataclass(frozen=True)
class DiagnosticCommand:
    """One entry of ``diagnostics = [...]`` (a string, or a table with these keys)."""

    command: str
    """A shell line run in the workspace; ``{file}`` is replaced by the quoted path."""
    paths: tuple[str, ...] = ()
    """Path globs (``*.py``; ``*`` crosses ``/``) of the files it runs for; empty: every file of
    a language the syntax check knows."""
    timeout: float = DEFAULT_DIAGNOSTIC_TIMEOUT
    source: str = ""
    """Where it was configured (``file:line``), for warnings."""

    def applies_to(self, path: str) -> bool:
        if self.paths:
            return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.paths)
        return language_for(path) is not None

    def command_for(self, path: str) -> str:
        """The command line for ``path``: quoted, and never read as an option (``./-x.py``)."""
        return self.command.replace("{file}", shlex.quote("./" + path if path.startswith("-") else path))


# -- syntax -----------------------------------------------------------------------------------


def syntax_problems(path: str, data: bytes) -> list[Problem] | None:
    """The syntax problems of ``data`` as the file ``path`` (``[]``: it parses); ``None`` when
    it is not checked (unknown language, no grammar, over :data:`MAX_PARSE_BYTES`)."""
    language = language_for(path)
    if language is None or len(data) > MAX_PARSE_BYTES:
        return None
    lines = data.split(b"\n")
    found = _tree_problems(language, data, lines)
    if found and path.lower().endswith(".h") and _tree_problems("cpp", data, lines) == []:
        return []  # a C++ header (the index reads .h as C)
    if language != "python":
        return found
    compiled = _compile_problem(data, path, lines)
    if compiled is None:
        return []  # compile() is the judge: the grammar also flags some valid (new) syntax
    return [compiled, *(p for p in found or () if p.line != compiled.line)]


def introduced_problems(path: str, before: bytes | None, after: bytes) -> list[Problem]:
    """The problems of ``after`` when the edit introduced them: ``before`` (None: a new file)
    parsed cleanly, or was not checked. A file that was already broken gets none."""
    problems = syntax_problems(path, after)
    if not problems or before is None:
        return problems or []
    return [] if syntax_problems(path, before) else problems


def format_problems(path: str, problems: list[Problem]) -> str:
    """The text appended to a tool result (empty for no problems)."""
    if not problems:
        return ""
    parts = [f"\n\n[diagnostics] {path} does not parse after this edit:"]
    for problem in problems[:MAX_PROBLEMS]:
        parts.append(f"  line {problem.line}, column {problem.column}: {problem.message}")
        if problem.text.strip():
            parts.append(f"    {problem.line} | {problem.text}")
    if len(problems) > MAX_PROBLEMS:
        parts.append(f"  ... and {len(problems) - MAX_PROBLEMS} more")
    return "\n".join(parts)


def _line_text(lines: list[bytes], row: int) -> str:
    if row >= len(lines):
        return ""
    text = lines[row].rstrip(b"\r").decode("utf-8", "replace").rstrip()
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + "..."


def _problem(lines: list[bytes], row: int, byte_column: int, message: str) -> Problem:
    prefix = lines[row][:byte_column] if row < len(lines) else b""
    return Problem(row + 1, len(prefix.decode("utf-8", "replace")) + 1, message, _line_text(lines, row))


def _compile_problem(data: bytes, path: str, lines: list[bytes]) -> Problem | None:
    try:
        with warnings.catch_warnings():  # SyntaxWarning (invalid escapes, ...) is no error
            warnings.simplefilter("ignore")
            compile(data, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        row = max((exc.lineno or 1) - 1, 0)
        text = _line_text(lines, row)
        column = min(max(exc.offset or 1, 1), len(text) + 1)
        return Problem(row + 1, column, f"{exc.msg} (Python: {type(exc).__name__})", text)
    except (ValueError, RecursionError, MemoryError):  # null bytes, absurd nesting: no verdict
        return None
    return None


def _tree_problems(language: str, data: bytes, lines: list[bytes]) -> list[Problem] | None:
    from tree_sitter import Parser

    from codeloop.index.languages import grammar, parse

    lang = grammar(language)
    if lang is None:
        return None
    # A parser of its own: the index's cached ones may be busy in another thread.
    root = parse(Parser(lang), language, data).root_node
    if not root.has_error:
        return []
    return [_describe(node, data, lines) for node in _error_nodes(root)]


def _error_nodes(root: Node) -> Iterator[Node]:
    """ERROR and MISSING nodes in document order, outermost only."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            yield node
        elif node.has_error:
            stack.extend(reversed(node.children))


def _describe(node: Node, data: bytes, lines: list[bytes]) -> Problem:
    row, column = node.start_point
    if node.is_missing:
        what = node.type if node.is_named else f'"{node.type}"'
        if not data[node.start_byte:].strip():  # only blanks follow: name the last line
            last = len(data.rstrip().split(b"\n")) - 1
            return _problem(lines, last, len(lines[last].rstrip()), f"missing {what} at the end of the file")
        return _problem(lines, row, column, f"missing {what}")
    unclosed = _unclosed_bracket(node.children)
    if unclosed is not None:
        row, column = unclosed.start_point
        return _problem(lines, row, column, f'"{unclosed.type}" is never closed')
    leaves = list(_leaves(node))
    token = _first_line(leaves[0].text if leaves else node.text)
    if len(leaves) == 1:
        return _problem(lines, row, column, f'unexpected "{token}"')
    return _problem(lines, row, column, f'cannot parse from "{token}" on')


def _unclosed_bracket(children: Iterable[Node]) -> Node | None:
    """The first opening bracket among ``children`` that none of them closes."""
    open_: list[Node] = []
    for child in children:
        if child.type in _OPENERS:
            open_.append(child)
        elif open_ and child.type == _OPENERS[open_[-1].type]:
            open_.pop()
    return open_[0] if open_ else None


def _leaves(node: Node) -> Iterator[Node]:
    if not node.children:
        yield node
    for child in node.children:
        yield from _leaves(child)


def _first_line(text: bytes | None) -> str:
    line = (text or b"").split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return line if len(line) <= 40 else line[:40] + "..."


# -- the pipeline step ------------------------------------------------------------------------


class Diagnostics:
    """The WATCH step of the agent's calls: reads the files an edit names before it runs and,
    after it, appends what the edit broke (:func:`introduced_problems`) and the commands' output."""

    def __init__(self, commands: Iterable[DiagnosticCommand] = (), warn: Warn | None = None) -> None:
        self.commands = tuple(commands)
        self.warn = warn or (lambda message: None)

    def checked(self, path: str) -> bool:
        return language_for(path) is not None or any(c.applies_to(path) for c in self.commands)

    async def watch(self, call: ToolCallRequest, env: ExecutionEnvironment) -> AfterCall | None:
        """The after-step of ``call`` with the files it names as they are now, or None when the
        call edits no checked file."""
        if Effect.WRITE not in call.effects or call.paths is None:
            return None  # the files a shell line (or an undeclared tool) changes are not named: not checked
        paths = [p for p in dict.fromkeys(call_paths(call, Path(env.working_directory()))) if self.checked(p)]
        if not paths:
            return None
        before = {path: await _read(env, path) for path in paths}
        return partial(self.after, env, before)

    async def after(self, env: ExecutionEnvironment, before: dict[str, bytes | None], call: ToolCallRequest,
                    output: ToolOutput) -> ToolOutput:
        """``output`` with the diagnostics of each file the call changed appended."""
        if output.is_error:  # a failed edit wrote nothing
            return output
        notes = []
        for path, old in before.items():
            new = await _read(env, path)
            if new is None or new == old:
                continue
            notes.append(format_problems(path, introduced_problems(path, old, new)))
            for command in self.commands:
                if command.applies_to(path):
                    notes.append(await self.run(command, path, env))
        text = output.text + "".join(notes)
        if text == output.text:
            return output
        return ToolOutput(text, is_error=output.is_error, images=output.images, data=output.data)

    async def run(self, command: DiagnosticCommand, path: str, env: ExecutionEnvironment) -> str:
        """The text one command adds for ``path`` (empty: exit 0 and silent, or it failed to run,
        which goes to ``warn``); never raises."""
        line = command.command_for(path)
        name = f"diagnostics command `{line}`" + (f" ({command.source})" if command.source else "")
        try:
            outcome = await run_command(env, line, timeout_ms=max(int(command.timeout * 1000), 1))
        except Exception as exc:  # the user's command must not fail the agent's call
            self.warn(f"{name} could not run: {exc}")
            return ""
        if outcome.status == "timed_out":
            self.warn(f"{name} ran past its timeout of {command.timeout:g} s and was killed with its child processes")
            return ""
        if outcome.status in ("not_started", "killed"):
            how = "could not start" if outcome.status == "not_started" else f"was killed by signal {outcome.signal}"
            self.warn(f"{name} {how}" + (f": {outcome.stderr.strip()[:300]}" if outcome.stderr.strip() else ""))
            return ""
        shown = outcome.output.strip()
        if not shown and outcome.exit_code == 0:
            return ""
        status = "" if outcome.exit_code == 0 else f": exit code {outcome.exit_code}"
        body = truncate_output(shown, COMMAND_OUTPUT_LIMIT, "head_tail_counted") if shown else "(no output)"
        return f"\n\n[diagnostics `{line}`{status}]\n{body}"


async def _read(env: ExecutionEnvironment, path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist or cannot be read (too large included)."""
    try:
        if not await env.file_exists(path):
            return None
        info = await env.stat(path)
        if info.is_dir or info.size > MAX_PARSE_BYTES:
            return None
        return await env.read_bytes(path)
    except (WorkspaceError, OSError):
        return None
