"""Turn guard: a function the task names is still a stub (issue 20).

Asked to implement a function whose file holds only its signature and docstring, the 1.5B
model wrote that same stub back (a ``write_file`` of the docstring, an ``edit_file`` whose
new text was the old) and was then told "already done"; or it answered that it had
implemented the function. The bare model, asked in a chat, writes the body at once.

So after a call that edits a Python file, and before a final answer, the Python files the
task names or this input edited are parsed (``ast``, nothing runs): a function the task
names whose body is only a docstring, ``pass``, ``...`` or ``raise NotImplementedError`` is
pointed out, with the form that writes it. At most :data:`MAX_NUDGES` per input; small-window
sessions only (``Session.small_model``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from codeloop.agent.claims import file_names
from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, nudge, rescues_on
from codeloop.agent.guards.kept_definitions import EDITING_TOOLS, file_text
from codeloop.agent.history import CallResult
from codeloop.agent.reply_reader import Reply
from codeloop.llm.types import ToolCall
from codeloop.policy.approval import ToolCallRequest
from codeloop.tools.hooks import call_paths

if TYPE_CHECKING:
    from codeloop.agent.session import Session

MAX_NUDGES = 2


def _is_stub_statement(node: ast.stmt) -> bool:
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return node.value.value is Ellipsis or isinstance(node.value.value, str)  # ``...`` or a docstring
    if isinstance(node, ast.Raise) and node.exc is not None:
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    return False


def stubs(source: str) -> list[str]:
    """Names of the functions of ``source`` (methods and nested ones too) that have no code:
    only a docstring, ``pass``, ``...`` or ``raise NotImplementedError``. None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and all(_is_stub_statement(statement) for statement in node.body)]


class StubLeft(TurnGuard):
    def __init__(self) -> None:
        self.edited: list[str] = []
        """Python files the input's editing calls named, first edited first."""
        self.told: set[tuple[str, str]] = set()

    def applies(self, session: Session) -> bool:
        return rescues_on(session)

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        root = Path(turn.session.environment.working_directory())
        edited = [p for call in calls if call.name in EDITING_TOOLS
                  for p in call_paths(ToolCallRequest(call.name, dict(call.arguments)), root) if p.endswith(".py")]
        if not edited:
            return ACCEPT
        self.edited += [p for p in edited if p not in self.edited]
        return await self._check(edited, turn)

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        if reply.calls:
            return ACCEPT
        named = [n.removeprefix("./") for n in file_names(turn.task) if n.endswith(".py")]
        return await self._check([*self.edited, *(n for n in named if n not in self.edited)], turn)

    async def _check(self, paths: list[str], turn: Turn) -> GuardAction:
        if len(self.told) >= MAX_NUDGES:
            return ACCEPT
        mentioned = set(re.findall(r"\w+", turn.task))
        for path in paths:
            source = await file_text(turn.session, path)
            for name in stubs(source or ""):
                if name in mentioned and (path, name) not in self.told:
                    self.told.add((path, name))
                    return nudge(f"`{name}` in {path} still has no code, only its docstring: the task is not done. "
                                 + _how(turn.session, path))
        return ACCEPT


def _how(session: Session, path: str) -> str:
    if session.profile.native_tool_calls or session.constrained:
        return f"Write the whole function with its code under the docstring (write_file or edit_file on {path})."
    return ("Write the whole function with its code under the docstring: the file's name on its own line, "
            f"then the function in a fenced block:\n{path}\n```python\n(the complete function)\n```")

