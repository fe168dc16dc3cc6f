"""Turn guard: a function the task asks to implement is checked against its own docstring examples (issue 20).

An agent that can run code should do better than its model answering once in a chat; the
stub draft (:mod:`.stub_left`) makes the 1.5B model's answer as good as its chat answer
(HumanEval dev at 7f04daa: 6/10, the same six as the bare model), and nothing after it
checked what was written. Most such functions carry examples in their docstring
(``>>> add(2, 3)`` / ``5``).

So when the task names a function of a Python file it names, the function was a stub when
the input began, and its docstring holds ``>>>`` examples, then once the function has code
and the model replies without calls (its answer, an empty reply, an echo), codeloop runs
``python3 -m doctest FILE`` through the pipeline (policy, approval, sandbox, events),
announced by a ``warning`` event with code ``verify``. When examples fail, the function is
drafted once more alone (:func:`.stub_left.drafted_edit`: the stub and the doctest report;
not the version that failed, which the 1.5B model then wrote again unchanged), applied as the model's next call, and the examples are run again;
the model then answers after that run; when the second version fails as many examples as
the first or more, the first is put back. At most two runs and one redraft per input;
small-window sessions only (``Session.small_model``).
"""

from __future__ import annotations

import ast
import re
import shlex
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeloop.agent.claims import file_names
from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, rescues_on, run_instead
from codeloop.agent.guards.kept_definitions import file_text
from codeloop.agent.guards.stub_left import defined_functions, drafted_edit, stubs
from codeloop.agent.guards.work_report import EXIT_CODE, ran_command
from codeloop.agent.history import CallResult
from codeloop.agent.reply_reader import Reply
from codeloop.llm.types import ToolCall
from codeloop.tools.edit import EDIT_FILE
from codeloop.tools.shell import SHELL

if TYPE_CHECKING:
    from codeloop.agent.session import Session

MAX_REPORT_CHARS = 1_500
"""The doctest report sent with the redraft is cut to this (the first failures say enough)."""


def with_examples(source: str, names: set[str]) -> list[str]:
    """The functions of ``source`` among ``names`` whose docstring holds a ``>>>`` example."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.name in names and ">>>" in (ast.get_docstring(n) or "")]


class ExamplesCheck(TurnGuard):
    def __init__(self) -> None:
        self.target: tuple[str, str, str] | None = None
        """(file, function, the file as the input found it) to check."""
        self.runs = 0
        self.redrafted = False
        self.failure: str | None = None
        """The last doctest run's report, when examples failed and no change came since."""
        self.checked = ""
        """The file's text the last run checked."""
        self.first: tuple[str, int] | None = None
        """The file's text at the first run and how many examples failed there, when some did."""
        self.reverted = False

    def applies(self, session: Session) -> bool:
        return rescues_on(session) and session.profile.tool_registry.get(SHELL) is not None

    async def before_input(self, turn: Turn) -> str:
        mentioned = set(re.findall(r"\w+", turn.task))
        for name in file_names(turn.task):
            path = name.removeprefix("./")
            if not path.endswith(".py") or (source := await file_text(turn.session, path)) is None:
                continue
            found = with_examples(source, mentioned & set(stubs(source)))
            if found:
                self.target = (path, found[0], source)
                break
        return ""

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        for call, result in zip(calls, results, strict=True):
            if call.id.startswith("examples-") and call.name == SHELL:
                # A run refused (policy, approval) says nothing of the examples: no redraft.
                code = EXIT_CODE.search(result.content) if ran_command(call, result) else None
                self.failure = result.content if code is not None and code.group(1) != "0" else None
        return ACCEPT

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        if reply.calls or self.target is None:
            return ACCEPT
        path, name, original = self.target
        session = turn.session
        now = await file_text(session, path)
        if now is None or name in stubs(now) or name not in {f.name for f in defined_functions(now) or ()}:
            return ACCEPT
        if now != self.checked and self.runs < 2:
            return self._run(now, path, name)
        if self.failure is not None and not self.redrafted:
            self.redrafted = True
            self.first = (now, failures(self.failure))
            call = await drafted_edit(session, turn.task, path, name, original, feedback=cut_report(self.failure))
            if call is not None:
                return run_instead(call, f"`{name}` in {path} failed its docstring examples: codeloop asked the "
                                         "model for that function alone again, with the failures, and applies its "
                                         "answer")
        if self.first is not None and self.failure is not None and now == self.checked and not self.reverted \
                and failures(self.failure) >= self.first[1] and now != self.first[0]:
            # The second version fails as many examples or more: the first stays (a report
            # that cannot be met, such as an example printed in another format, must not
            # cost a version that was right).
            self.reverted = True
            call = ToolCall(f"examples-back-{uuid.uuid4().hex[:8]}", EDIT_FILE,
                            {"file_path": path, "old_string": now, "new_string": self.first[0]})
            return run_instead(call, f"the second version of `{name}` failed as many examples as the first: "
                                     "codeloop puts the first back")
        return ACCEPT

    def _run(self, now: str, path: str, name: str) -> GuardAction:
        self.runs += 1
        self.checked = now
        self.failure = None
        call = ToolCall(f"examples-{uuid.uuid4().hex[:8]}", SHELL,
                        {"command": f"python3 -m doctest {shlex.quote(path)}"})
        return run_instead(call, f"`{name}` in {path} has examples in its docstring: codeloop runs them")


_FAILED = re.compile(r"\*\*\*Test Failed\*\*\*\s+(\d+)\s+failure")


def failures(report: str) -> int:
    """How many examples a doctest report says failed (one when it says none: the file did
    not even import)."""
    return sum(int(n) for n in _FAILED.findall(report)) or 1


def cut_report(report: str) -> str:
    """The start of a doctest report, at most :data:`MAX_REPORT_CHARS`."""
    return report if len(report) <= MAX_REPORT_CHARS else report[:MAX_REPORT_CHARS] + "\n[...]"
