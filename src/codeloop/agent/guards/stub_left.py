"""Turn guard: a function the task names is still a stub (issue 20).

Asked to implement a function whose file holds only its signature and docstring, the 1.5B
model wrote that same stub back (a ``write_file`` of the docstring, an ``edit_file`` whose
new text was the old, answered "already done"), or answered "I implemented it" over the
untouched stub; told so, it replied with nothing. The same model, asked in a chat to
"complete the following Python function", writes the body at once (HumanEval: 15/21).

So from the model's first reply of an input on, and again when it answers (or replies empty,
or goes on calling tools after editing the file), while a function the task names is still a
stub in a Python file the task names or the input edited, codeloop asks the model for that
function alone, in the chat form it is good at (the
task, then the file in a fenced block; no tools, no history: :meth:`Session.ask_alone`), and
the function from its reply becomes the model's next call: an edit of that definition
(:mod:`codeloop.agent.file_edits`), run through the pipeline, its policy and approval, like
any call. On the first reply the draft takes the place of the reply's own calls, even when
they write the function themselves: the same model writes better code asked alone than inside
a tool call (HumanEval dev at 3d7664e: on /65 its first call wrote a wrong body, its bare chat
answer a right one; on the others the first reply read the file or wrote the stub back, and
the rounds after it were lost); when the draft gives no usable function there, the reply's
calls run and the draft is asked again at the answer.
Then, with no usable function, the model is told what is missing instead.
Once per function and input; small-window sessions only (``Session.small_model``).

A function the task asks to *add* (``Add a function is_even(n) to mathutils.py``, ``Add
parse_size(text) to units.py``: :func:`wanted_functions`) to the one Python file it names,
which that file does not define yet, is drafted the same way (``Write the Python function
`is_even` to add to mathutils.py, which holds:`` and the file) and added after the file's code
(:func:`codeloop.agent.file_edits.appended_definitions`). Seen on dev task 06: the model's first
call replaced ``def square(x):`` with ``def is_even(n):``. A first reply whose calls add the
function and keep the file's others runs as it is; one that drops another function does not
count as adding it.

A stub: a body of only a docstring, ``pass``, ``...`` or ``raise NotImplementedError``, found
with ``ast`` (nothing runs). Stubs the task does not name are left alone.
"""

from __future__ import annotations

import ast
import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeloop.agent.call_forms import CallForms
from codeloop.agent.claims import file_names
from codeloop.agent.file_edits import appended_definitions, plan_file_edit
from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, nudge, rescues_on, run_instead
from codeloop.agent.guards.kept_definitions import file_text, written_paths
from codeloop.agent.guards.verify_answer import call_form
from codeloop.agent.history import CallResult
from codeloop.agent.named_blocks import fenced_bodies
from codeloop.agent.reply_reader import Reply
from codeloop.llm.errors import SDKError
from codeloop.llm.types import ToolCall
from codeloop.tools.edit import EDIT_FILE
from codeloop.tools.files import WRITE_FILE

if TYPE_CHECKING:
    from codeloop.agent.session import Session

_WANTED = re.compile(
    r"\b(?:add|write|create|implement|define)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:(?:python\s+)?(?:function|helper)\s+)?"
    r"`?([A-Za-z_]\w*)`?\s*\("
    r"|\b(?:add|write|create|implement|define)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:python\s+)?(?:function|helper)"
    r"\s+(?:called\s+|named\s+)?`?([A-Za-z_]\w*)`?",
    re.IGNORECASE)
_NOT_NAMES = frozenset({"that", "which", "to", "in", "for", "with", "and", "the", "a", "an", "called", "named"})
MAX_SOURCE_CHARS = 12_000
"""Larger files are not sent whole in a side request (about a third of an 8 k window)."""


def _is_stub_statement(node: ast.stmt) -> bool:
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return node.value.value is Ellipsis or isinstance(node.value.value, str)  # ``...`` or a docstring
    if isinstance(node, ast.Raise) and node.exc is not None:
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    return False


def defined_functions(source: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """Every function of ``source`` (methods and nested ones too); None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def stubs(source: str) -> list[str]:
    """Names of the functions of ``source`` (methods and nested ones too) that have no code:
    only a docstring, ``pass``, ``...`` or ``raise NotImplementedError``; none when it does not parse."""
    return [f.name for f in defined_functions(source) or () if all(_is_stub_statement(s) for s in f.body)]


def implementation(reply: str, name: str) -> str | None:
    """The code of the first fenced block of ``reply`` (else the whole reply) that parses and
    defines ``name`` with a body that is no stub."""
    for candidate in [*fenced_bodies(reply), reply]:
        functions = defined_functions(candidate)
        if functions and any(f.name == name for f in functions) and name not in stubs(candidate):
            return candidate if candidate.endswith("\n") else candidate + "\n"
    return None


def _writes_code(calls: Sequence[ToolCall], path: str, source: str, name: str) -> bool:
    """True when ``calls`` give ``name`` in ``path`` (now ``source``) a body that is no stub:
    a whole new file, or an edit whose result, applied to ``source``, defines it with code."""
    text = source
    for call in calls:
        args = call.arguments
        if str(args.get("file_path", "")).removeprefix("./") != path:
            continue
        content, old, new = args.get("content"), args.get("old_string"), args.get("new_string")
        if call.name == WRITE_FILE and isinstance(content, str):
            text = content
        elif call.name == EDIT_FILE and isinstance(old, str) and isinstance(new, str) and old and old in text:
            text = text.replace(old, new, 1)
    kept = {f.name for f in defined_functions(text) or ()} >= {f.name for f in defined_functions(source) or ()}
    return text != source and kept and implementation(text, name) is not None


def wanted_functions(task: str) -> list[str]:
    """Names of functions ``task`` asks to add (``Add a function is_even(n) to ...``, ``Add
    parse_size(text) to ...``, ``write a function `slug` ...``), in order."""
    return list(dict.fromkeys(m.group(1) or m.group(2) for m in _WANTED.finditer(task)
                              if (m.group(1) or m.group(2)) not in _NOT_NAMES))


class StubLeft(TurnGuard):
    def __init__(self) -> None:
        self.edited: list[str] = []
        """Python files the input's editing calls named, first edited first."""
        self.handled: set[tuple[str, str]] = set()
        self.replied = False
        self.original: dict[str, str] = {}
        """The task's Python files as the input found them: the draft is asked on these, since
        a small model's rewrite may have lost what the function needs (an import)."""
        self.wanted: list[tuple[str, str]] = []
        """(file, function) the task asks to add to the one Python file it names, not there yet."""

    def applies(self, session: Session) -> bool:
        return rescues_on(session)

    async def before_input(self, turn: Turn) -> str:
        for name in file_names(turn.task):
            path = name.removeprefix("./")
            if path.endswith(".py") and (text := await file_text(turn.session, path)) is not None:
                self.original[path] = text
        if len(self.original) == 1:
            ((path, text),) = self.original.items()
            there = {f.name for f in defined_functions(text) or ()}
            self.wanted = [(path, name) for name in wanted_functions(turn.task) if name not in there]
        return ""

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        for call in calls:
            paths = written_paths(turn.session, call)
            self.edited += [p for p in paths if p.endswith(".py") and p not in self.edited]
        return ACCEPT

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        first, self.replied = not self.replied, True
        if reply.calls and not self.edited and not first:  # still looking around: let it work
            return ACCEPT
        found = await self._stub(turn)
        if found is None:
            return ACCEPT
        path, name, source, missing = found
        if first and missing and reply.calls and _writes_code(reply.calls, path, source, name):
            return ACCEPT  # the model added the function itself: its calls run, checked again at the answer
        session = turn.session
        original = self.original.get(path)
        shown = original if original is not None and (missing or name in stubs(original)) else source
        call = await drafted_edit(session, turn.task, path, name, shown, missing)
        if call is None and first and reply.calls:
            return ACCEPT  # no draft yet: the model's own calls run, and the draft is asked again when it answers
        self.handled.add((path, name))
        if call is None:
            said = f"{path} has no function `{name}` yet" if missing else \
                f"`{name}` in {path} still has no code, only its docstring"
            return nudge(f"{said}: the task is not done. " + _how(session, path))
        written = "" if not reply.calls or session.profile.native_tool_calls else call_form(
            session, call.name, {k: str(v) for k, v in call.arguments.items()})
        what = f"{path} had no function `{name}` yet" if missing else f"`{name}` in {path} was still a stub"
        return run_instead(call, f"{what}: codeloop asked the model for that function alone and applies its answer",
                           written)

    async def _stub(self, turn: Turn) -> tuple[str, str, str, bool] | None:
        """The first (path, function, file text, missing) the task names that is still a stub,
        else the first function it asks to add that its file does not define with code."""
        mentioned = set(re.findall(r"\w+", turn.task))
        named = [n.removeprefix("./") for n in file_names(turn.task) if n.endswith(".py")]
        for path in [*self.edited, *(n for n in named if n not in self.edited)]:
            source = await file_text(turn.session, path)
            for name in stubs(source or ""):
                if source is not None and name in mentioned and (path, name) not in self.handled:
                    return path, name, source, False
        for path, name in self.wanted:
            source = await file_text(turn.session, path)
            if source is not None and (path, name) not in self.handled and implementation(source, name) is None:
                return path, name, source, True
        return None


async def drafted_edit(session: Session, task: str, path: str, name: str, source: str,
                       missing: bool = False, feedback: str | None = None) -> ToolCall | None:
    """The edit giving ``name`` in ``path`` the body the model writes when asked for it alone,
    shown ``source`` (the file); imports the draft brings that the file lacks are added. A
    ``missing`` function is added after the file's code. ``feedback``: the report of a run of
    a first version that failed, shown after the ask (the version itself is not: shown it,
    the 1.5B model wrote it again unchanged; shown only the failures, it wrote HumanEval/33
    right)."""
    if len(source) > MAX_SOURCE_CHARS:
        return None
    ask = (f"Write the Python function `{name}` to add to {path}, which holds:" if missing
           else f"Complete the following Python function `{name}` ({path}):")
    prompt = f"{task.strip()}\n\n{ask}\n```python\n{source}```"
    if feedback is not None:
        prompt += f"\n\nA first attempt failed these examples:\n```\n{feedback.strip()}\n```\nWrite a correct implementation."
    try:
        answer = await session.ask_alone(prompt)
    except SDKError:  # the conversation's own next request reports a lasting failure
        return None
    code = implementation(answer, name)
    if code is None:
        return None
    schemas = {d.name: d.parameters for d in session.profile.tool_registry.definitions()}
    forms = CallForms(schemas, CallForms.style_of(session.constrained, session.profile.native_tool_calls))
    # A function to add goes after the file's code; only a draft that also redefines what the
    # file has (appended_definitions: None) is read as plan_file_edit reads any block. Asked
    # the other way round, a file without definitions (constants only) was replaced whole.
    if missing and (now := await file_text(session, path)) is not None \
            and (added := appended_definitions(path, now, code)) is not None:
        code = added
    plan = await plan_file_edit(path, code, session.environment, schemas, forms)
    if plan.problem or len(plan.calls) != 1:
        return None
    ((tool, arguments),) = plan.calls
    return ToolCall(f"draft-{uuid.uuid4().hex[:8]}", tool, arguments)


def _how(session: Session, path: str) -> str:
    if session.profile.native_tool_calls or session.constrained:
        return f"Write the whole function with its code under the docstring (write_file or edit_file on {path})."
    return ("Write the whole function with its code under the docstring: the file's name on its own line, "
            f"then the function in a fenced block:\n{path}\n```python\n(the complete function)\n```")
