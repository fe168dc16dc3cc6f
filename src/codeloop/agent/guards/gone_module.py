"""Turn guard: a Python module the task deletes is gone, and other files still use it (issue 20).

Asked to delete metrics.py "and remove its import and every use of it from app.py and
worker.py", the 1.5B model ran ``rm -- metrics.py``, answered that the imports and uses were
removed, then wrote app.py back with ``import metrics`` and its calls still in it; the
program failed, and its fix replaced one import line with ``pass`` (dev task 33 at 7f04daa).

When the task asks to delete or remove something and names a module ``m`` whose file
``m.py`` was in the workspace when the input began and is gone now, every reply without calls
(an answer, an empty reply, an echo) while a Python file still uses ``m`` is answered, once per
file and input:

- when every use is a statement of its own (``import m``, ``from m import a, b``, an
  expression statement that mentions ``m`` or a name imported from it, such as
  ``m.count("x")`` or ``print(m.summary())``), codeloop makes the change the task asked for:
  those statements removed (a block left empty gets ``pass``), an ``edit_file`` of the file
  run through the pipeline (policy, approval, diff, events), announced by a ``warning`` event with
  code ``verify``; the model then answers again;
- otherwise (a use inside an assignment, a condition, an argument of something kept) the model
  is told the lines that still use it.

A task that also moves, renames, merges, splits or replaces something is only told: there the
uses may be meant to point elsewhere, not to go. Found with ``ast`` (nothing runs).
Small-window sessions only (``Session.small_model``).
"""

from __future__ import annotations

import ast
import re
import uuid
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, nudge, rescues_on, run_instead
from codeloop.agent.guards.kept_definitions import exists, file_text, project_files
from codeloop.agent.reply_reader import Reply
from codeloop.llm.types import ToolCall

if TYPE_CHECKING:
    from codeloop.agent.session import Session

_DELETES = re.compile(r"\b(?:delet|remov|drop|get\s+rid\s+of|no\s+longer\s+need|don'?t\s+need)", re.IGNORECASE)
_REDIRECTS = re.compile(r"\b(?:mov|renam|merg|split|replac|extract|consolidat|inlin)", re.IGNORECASE)


def _module(path: str) -> str:
    parts = PurePosixPath(path).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _names_from(tree: ast.Module, module: str) -> set[str]:
    """The names ``tree`` binds to ``module`` or to names imported from it."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name == module}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == module:
            names |= {a.asname or a.name for a in node.names if a.name != "*"}
    return names


def _goes(node: ast.stmt, module: str, names: set[str]) -> bool:
    """A statement that exists only for the gone module: its import, or an expression
    statement that mentions one of its names."""
    if isinstance(node, ast.Import):
        return all(a.name == module for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and node.module == module
    return isinstance(node, ast.Expr) and any(
        isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def uses(source: str, module: str) -> list[int] | None:
    """1-based lines of ``source`` that use ``module`` (import it, or use what it imported);
    None when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return _use_lines(tree, module, _names_from(tree, module))


def _use_lines(tree: ast.Module, module: str, names: set[str]) -> list[int]:
    lines = {n.lineno for n in ast.walk(tree)
             if (isinstance(n, ast.Import) and any(a.name == module for a in n.names))
             or (isinstance(n, ast.ImportFrom) and n.level == 0 and n.module == module)
             or (isinstance(n, ast.Name) and n.id in names)}
    return sorted(lines)


def without_module(source: str, module: str) -> str | None:
    """``source`` with every statement that only serves ``module`` removed (a block left empty
    holds ``pass``), or None when some use of it is part of a statement that stays, statements
    share a line, or the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names = _names_from(tree, module)
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    empty_blocks: list[tuple[int, int]] = []
    """(line after which ``pass`` goes, its column) for each block whose statements all go."""
    starts: dict[int, int] = {}
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            for stmt in block:
                starts[stmt.lineno] = starts.get(stmt.lineno, 0) + 1
            going = [s for s in block if _goes(s, module, names)]
            for stmt in going:
                drop.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
            if going and len(going) == len(block) and not isinstance(node, ast.Module):
                empty_blocks.append((block[-1].end_lineno or block[-1].lineno, block[0].col_offset))
    if not drop or any(count > 1 for line, count in starts.items() if line in drop):
        return None
    kept: list[str] = []
    passes = dict(empty_blocks)
    for number, line in enumerate(lines, 1):
        if number not in drop:
            kept.append(line)
        if number in passes:
            kept.append(" " * passes[number] + "pass\n")
    result = "".join(kept)
    try:  # the names the module gave must not be used any more, though nothing imports them now
        left = _use_lines(ast.parse(result), module, names)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return None if left else result


class GoneModule(TurnGuard):
    def __init__(self) -> None:
        self.modules: dict[str, str] = {}
        """Module name → its file, for the task-named modules present when the input began."""
        self.handled: set[str] = set()

    def applies(self, session: Session) -> bool:
        return rescues_on(session) and session.profile.tool_registry.get("edit_file") is not None

    async def before_input(self, turn: Turn) -> str:
        if not _DELETES.search(turn.task):
            return ""
        for path in await _python_files(turn.session):
            module = _module(path)
            if module and re.search(rf"(?<![\w.]){re.escape(module.split('.')[-1])}(?![\w])", turn.task):
                self.modules[module] = path
        return ""

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        if reply.calls or not self.modules:
            return ACCEPT
        session = turn.session
        gone = {m: p for m, p in self.modules.items() if not await exists(session, p)}
        if not gone:
            return ACCEPT
        told_only = bool(_REDIRECTS.search(turn.task))
        for path in await _python_files(session):
            if path in self.handled:
                continue
            text = await file_text(session, path)
            if text is None:
                continue
            for module, module_path in gone.items():
                lines = uses(text, module)
                if not lines:
                    continue
                self.handled.add(path)
                cleaned = None if told_only else without_module(text, module)
                if cleaned is not None:
                    # edit_file of the whole text: unlike write_file it needs no read of the file
                    # first, and it fails if the file changed since it was looked at here.
                    call = ToolCall(f"unused-{uuid.uuid4().hex[:8]}", "edit_file",
                                    {"file_path": path, "old_string": text, "new_string": cleaned})
                    return run_instead(call, f"{module_path} is deleted and {path} still uses it: codeloop removes "
                                             f"its import and the statements that call it")
                shown = ", ".join(map(str, lines[:12]))
                return nudge(f"{module_path} is deleted, and {path} still uses it (lines {shown}). Change those "
                             "lines so the file no longer needs it, then give your final answer.")
        return ACCEPT



async def _python_files(session: Session) -> list[str]:
    return await project_files(session, "**/*.py")
