"""Turn guard: verify before answering (issue 20).

When the task names something to run (a command in backticks, ``python3 x.py``, ``pytest``,
"then run it", "make sure the tests pass", "the program must still run": the scripts it
names that run as a program, else the file just written) and the model answers without having run a
command since its last change, it is told once the exact call to make: the named command,
``python3 <the file just written>`` for "run it", the tests the task names. The call is the
model's own, so it runs through the pipeline and its policy like any other. When the model
answers again without running it, codeloop completes that reply with the call (seen with the
1.5B model: told once, it claimed a run that never happened): an ordinary call through the
pipeline, its policy and approval, announced by a ``warning`` event with code ``verify``; the
model then answers after its output.

When the task names nothing to run, the Python files written in this input are compiled
(``compile()``, which parses and runs nothing) before the final answer is taken; a syntax
error sends the model back with the error, at most twice per input.
"""

from __future__ import annotations

import json
import posixpath
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codeloop.agent.claims import file_names
from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, nudge, rescues_on, run_instead
from codeloop.agent.guards.work_report import EXIT_CODE, answered_already_done, changed_files, ran_command
from codeloop.agent.history import CallResult
from codeloop.agent.reply_reader import Reply
from codeloop.agent.text_tool_calls import filled_example
from codeloop.environments.errors import WorkspaceError
from codeloop.llm.types import ToolCall
from codeloop.tools import workspace_ops as ops

if TYPE_CHECKING:
    from codeloop.agent.session import Session

RUNNERS = frozenset("""
python python3 pytest py.test make npm npx yarn pnpm node deno bun bash sh go cargo ruby perl php java
uv poetry tox nox
""".split())
"""Programs whose command line, written in the task, is a command to run."""
MAX_SYNTAX_NUDGES = 2
FAILURE_LINES = 8
"""Lines of a failed run's output quoted back to the model."""
_ARG = r"(?:-{1,2}[\w-]+(?:=\S+)?|[\w./-]*[./][\w-][\w./-]*(?:::\w+)?|\d+|\"[^\"\n]*\"|'[^'\n]*')"
_BARE = re.compile(rf"\b((?:python3?\s+(?:-m\s+[\w.]+|[\w./-]+\.py)|pytest)(?:\s+{_ARG})*)")
_QUOTED = re.compile(r"`([^`\n]+)`")
_RUN_FILE = re.compile(r"\b(?:run|execute)\s+(?:the\s+(?:script|program|file)\s+)?`?([\w./-]+(\.\w+))`?", re.I)
_RUN_IT = re.compile(r"\b(?:run|execute)\s+(?:it|them|this|that|the\s+(?:script|program|file|code))\b", re.I)
_TESTS = re.compile(r"\btests?\s+(?:still\s+)?pass(?:es)?\b|\bmake\s+sure\s+(?:that\s+)?(?:the\s+|all\s+)?tests?\b"
                    r"|\brun\s+(?:the\s+|all\s+)?tests?\b|\bpassing\s+tests?\b", re.I)
_STILL_RUNS = re.compile(r"\b(?:must|should|to)\s+(?:still\s+|keep\s+)?(?:run|work)(?:s|ing)?\b|\bstill\s+runs?\b"
                         r"|\bbehaviou?r\s+(?:must|should)\s+not\s+change\b", re.I)
_RUN_FIRST = re.compile(r"\s*(?:please\s+)?(?:first\s+)?(?:run|execute)\b", re.I)
"""A task that starts with running something: that run is its first step."""
_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
_INTERPRETERS = {".py": "python3", ".sh": "bash", ".js": "node", ".mjs": "node", ".rb": "ruby", ".pl": "perl"}


@dataclass(frozen=True)
class RunRequest:
    """What a task asks to run."""

    command: str = ""
    """A command the task spells out."""
    run_written: bool = False
    """"run it": the program just written."""
    tests: bool = False
    """"make sure the tests pass"."""
    still_runs: bool = False
    """"the program must still run": the scripts the task names."""

    def __bool__(self) -> bool:
        return bool(self.command) or self.run_written or self.tests or self.still_runs


def run_request(task: str) -> RunRequest:
    """What ``task`` asks to run, if anything."""
    for match in _QUOTED.finditer(task):
        words = match.group(1).split()
        if words and (words[0] in RUNNERS or words[0].startswith("./")):
            return RunRequest(command=match.group(1).strip())
    if (bare := _BARE.search(task)) is not None:
        return RunRequest(command=bare.group(1).rstrip(".,;:"))
    for match in _RUN_FILE.finditer(task):
        if (runner := _INTERPRETERS.get(match.group(2))) is not None:
            return RunRequest(command=f"{runner} {match.group(1)}")
    return RunRequest(run_written=bool(_RUN_IT.search(task)), tests=bool(_TESTS.search(task)),
                      still_runs=bool(_STILL_RUNS.search(task)))


def call_form(session: Session, name: str, arguments: dict[str, str]) -> str:
    """The exact call as this session's model writes calls."""
    if session.constrained:
        return json.dumps({"tool": name, "arguments": arguments})
    if not session.profile.native_tool_calls:
        return filled_example(name, arguments)
    return f"{name} with arguments {json.dumps(arguments)}"


class VerifyBeforeAnswer(TurnGuard):
    def __init__(self) -> None:
        self.request: RunRequest | None = None
        self.ran = False
        """A command ran since the last change (or since the input began, with no change)."""
        self.written: list[str] = []
        """Files changed this input, last changed last."""
        self.nudged = False
        self.ran_for_model = False
        self.syntax_nudges = 0
        self.replied = False
        self.failed: tuple[str, str, str] | None = None
        """The last command run since the last change, when it failed: (command, exit code, output)."""
        self.told_failure = False
        self.stalled = False
        """Every call of the last tool round was answered "already done"."""

    def applies(self, session: Session) -> bool:
        return rescues_on(session) and session.profile.tool_registry.get("shell") is not None

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        for call, result in zip(calls, results, strict=True):
            if ran_command(call, result):
                self.ran = True
                code = EXIT_CODE.search(result.content)
                failed = code is not None and code.group(1) != "0"
                self.failed = (str(call.arguments["command"]), code.group(1), result.content) if failed and code else None
            elif changed := changed_files(turn.session, call, result):
                self.ran, self.failed = False, None
                self.written = [p for p in self.written if p not in changed] + changed
        self.stalled = bool(results) and all(answered_already_done(r) for r in results)
        return ACCEPT

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        if self.request is None:
            self.request = run_request(turn.task)
        first, self.replied = not self.replied, True
        if reply.calls and self.stalled and self.request and not (self.ran or self.ran_for_model):
            # Seen with the README's job: hello.py written, then the same write again and again
            # ("already done"), never run. The next repeat is replaced by the run the task asks for.
            command = await self._command(self.request, turn)
            if command is not None:
                self.ran_for_model = True
                run = {"command": command}
                written = "" if turn.session.profile.native_tool_calls else call_form(turn.session, "shell", run)
                return run_instead(ToolCall(f"verify-{uuid.uuid4().hex[:8]}", "shell", run),
                                   f"the task asks to run `{command}` and the model repeated work already done: "
                                   "codeloop runs it", written)
        if reply.calls:
            if first and self.request.command and _RUN_FIRST.match(turn.task) and not self.ran and not any(
                    str(c.arguments.get("command", "")).strip() == self.request.command for c in reply.calls):
                # "Run count.py and write what it prints to result.txt": the 1.5B model wrote
                # the number it guessed (14; the script prints 42) before running anything.
                # The task's first step is the run: codeloop makes it instead of that reply's
                # calls, through the pipeline, and the model goes on from its output.
                self.ran_for_model = True
                run = {"command": self.request.command}
                written = "" if turn.session.profile.native_tool_calls else call_form(turn.session, "shell", run)
                return run_instead(ToolCall(f"verify-{uuid.uuid4().hex[:8]}", "shell", run),
                                   f"the task starts with running `{self.request.command}`: codeloop runs it first",
                                   written)
            return ACCEPT
        if self.request:
            if self.failed is not None and self.told_failure:
                # Told, and answered again without a change or a new run: the answer stands,
                # but the user reads beside it what the run said (seen: "I fixed the import
                # ... it executed successfully" with the ImportError unchanged).
                ran, code, output = self.failed
                last = _tail(output, 1)
                turn.answer = (f"{reply.text.strip()}\n\n(codeloop: `{ran}` failed, exit code {code}"
                               + (f": {last})" if last else ")"))
                return ACCEPT
            if self.failed is not None:
                # Seen with the 1.5B model: codeloop ran the script, it failed with a
                # SyntaxError, and the answer quoted the output it had hoped for.
                self.told_failure = True
                ran, code, output = self.failed
                return nudge(f"Before you finish: `{ran}` failed (exit code {code}), so the task is not done:\n"
                             f"{_tail(output)}\nFix the cause, run it again, then give your final answer.")
            if self.ran or self.ran_for_model:
                return ACCEPT
            command = await self._command(self.request, turn)
            if command is None:
                return ACCEPT
            if self.nudged:
                # Told once and answered again without running it: a small model then often
                # claims a run that never happened. codeloop makes the call the task asks for,
                # through the pipeline like any call, and the model answers after its output.
                self.ran_for_model = True
                return run_instead(ToolCall(f"verify-{uuid.uuid4().hex[:8]}", "shell", {"command": command}),
                                   f"the task asks to run `{command}` and the model did not: codeloop runs it")
            self.nudged = True
            return nudge(f"Before you finish: the task asks to run `{command}`, and nothing was run since your "
                         "last change. Run it now, then give your final answer:\n"
                         + call_form(turn.session, "shell", {"command": command}))
        if self.syntax_nudges >= MAX_SYNTAX_NUDGES:
            return ACCEPT
        problem = await self._syntax_error(turn)
        if problem is None:
            return ACCEPT
        self.syntax_nudges += 1
        return nudge(f"Before you finish: {problem} Fix it, then give your final answer.")

    async def _command(self, request: RunRequest, turn: Turn) -> str | None:
        if request.command:
            return request.command
        env = turn.session.environment
        if request.still_runs and (scripts := await _named_scripts(turn)):
            return " && ".join(f"python3 {path}" for path in scripts)
        if request.run_written or request.still_runs:
            for path in reversed(self.written):
                runner = _INTERPRETERS.get(posixpath.splitext(path)[1])
                if runner is not None:
                    return f"{runner} {path}"
            return None
        named = [n.removeprefix("./") for n in file_names(turn.task) if _TEST_FILE.search(n)]
        tests = [p for p in await _workspace_files(turn) if _TEST_FILE.search(p)
                 and (not named or any(p == n or p.endswith("/" + n) for n in named))]
        if len(tests) == 1:
            try:
                text = (await ops.read_bytes(env, tests[0])).decode("utf-8", "replace")
            except (WorkspaceError, OSError):
                return None
            return f"python3 {tests[0]}" if "__main__" in text else f"python3 -m pytest -q {tests[0]}"
        return "python3 -m pytest -q" if tests else None

    async def _syntax_error(self, turn: Turn) -> str | None:
        """The first Python file written this input that does not compile, described."""
        for path in self.written:
            if not path.endswith(".py"):
                continue
            try:
                source = (await ops.read_bytes(turn.session.environment, path)).decode("utf-8", "replace")
                compile(source, path, "exec", dont_inherit=True)
            except SyntaxError as exc:
                line = (exc.text or "").strip()
                where = f" (line {exc.lineno}: `{line}`)" if exc.lineno and line else ""
                return f"{path} does not compile: {type(exc).__name__}: {exc.msg}{where}."
            except Exception:  # deleted since, not a file, too deeply nested: nothing to report
                continue
        return None


def _tail(output: str, lines: int = FAILURE_LINES) -> str:
    """The last lines of a command's output (where the error is), without the exit-code line."""
    kept = [line for line in output.rstrip().splitlines() if not EXIT_CODE.match(line)]
    return "\n".join(kept[-lines:])


async def _named_scripts(turn: Turn) -> list[str]:
    """The Python files the task names that exist and run as a program (``__main__``)."""
    scripts = []
    for name in file_names(turn.task):
        path = name.removeprefix("./")
        if not path.endswith(".py"):
            continue
        try:
            text = (await ops.read_bytes(turn.session.environment, path)).decode("utf-8", "replace")
        except (WorkspaceError, OSError):
            continue
        if "__main__" in text:
            scripts.append(path)
    return scripts


async def _workspace_files(turn: Turn) -> list[str]:
    try:
        return await turn.session.environment.glob("**/*.py")
    except (WorkspaceError, OSError):
        return []
