"""One input of the small-model strategy (issue 33): draft, check, choose.

A turn, for compact/local profiles only (the Session never sends a cloud profile here):

1. *Context*: the files the task names (by file name, path or ``module.name``; never by its
   verbs), their tests and imports, whole, and a short map of the rest
   (:func:`codeloop.agent.task_context.gather_plain_context`).
2. *Draft*: the greedy reply (temperature 0) under the reply format's GBNF grammar
   (:mod:`.reply_format`): FILE blocks, one RUN line, or DONE.
3. FILE blocks are applied in memory (:mod:`.hunks`), staged in a scratch workspace (the
   bubblewrap overlay, or a plain copy where bubblewrap has no overlay:
   :func:`codeloop.environments.scratch.open_scratch`) and judged by the checks found in the
   workspace (:mod:`.judge`). When the greedy candidate fails a check or cannot be applied,
   ``samples`` more are drafted, each with its own seed, and, if none passes, one repair
   round shows the model only the failing check's output. The best is chosen by
   :func:`.choose.choose` (checks passed, then agreement, then greedy).
4. The chosen change is written through the session's tool pipeline (policy, approval,
   checkpoint, the diff shown as for any edit); a RUN line runs there too. Then the model is
   asked for the next step, until DONE or ``steps`` drafts.
5. The answer is codeloop's own report of what changed and what ran (:class:`Report`),
   never the model's prose.

What it needs of the session comes through :class:`Ports` (the import contract
``small-model-apart`` keeps the Session, its guards and the rescues out of this package).
Nothing here reads the task's or the model's wording to decide what to write or run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from codeloop.agent.small_model.checks import CheckResult, module_of
from codeloop.agent.small_model.choose import Candidate, choose
from codeloop.agent.small_model.hunks import HunkError, apply_reply, changed_only
from codeloop.agent.small_model.judge import judge
from codeloop.agent.small_model.reply_format import (
    GRAMMAR,
    REPLY_FORMAT_PROMPT,
    DoneReply,
    FilesReply,
    Reply,
    ReplyFormatError,
    RunReply,
    complete_blocks,
    parse_reply,
    render_reply,
    repeated_block,
    without_examples,
)
from codeloop.agent.task_context import gather_plain_context
from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.llm.types import Message
from codeloop.policy.approval import ToolPolicy
from codeloop.tools import workspace_ops as ops
from codeloop.tools.call_path import Approvals

SYSTEM_PROMPT = ("You change files and run commands for the user, one step per reply: first the files the "
                 "task needs, then a command that runs them if there is one, then DONE.\n\n" + REPLY_FORMAT_PROMPT)
"""The system prompt of every draft (the same bytes each time: the server's prompt cache keeps it).
It never says "FILE blocks": the 1.5B model, under the grammar, began replies with ``FILE blocks:``
and wrote ``.gitignore`` to the path ``blocks:.FILE.gitignore``."""
MAX_PROJECT_FILES = 400
"""Python files read to judge imports and find tests (more: the rest are not looked at)."""
MIN_DRAFT_TOKENS = 768
"""The longest draft when the task shows no file (a new file from nothing)."""
SCRIPT_BASELINE_MS = 10_000
"""How long a script may run before a change to count as one that runs cleanly (a server that
never exits is no check)."""
MAX_OUTPUT_SHOWN = 2_000
"""Characters of a command's or a failing check's output shown to the model."""


@dataclass(frozen=True)
class StrategyConfig:
    """The knobs of the strategy (``SessionConfig.small_model_samples`` sets ``samples``)."""

    samples: int = 2
    """Candidates drafted after a greedy one that fails a check, each with its own seed."""
    repair: bool = True
    """One repair round when no candidate passes (the failing check's output shown)."""
    steps: int = 3
    """Greedy drafts per input (samples and the repair round not counted)."""
    temperature: float = 0.7
    """Sampling temperature of the samples (the greedy draft and the repair use 0)."""
    context_chars: int = 12_000
    """Characters of file text put in front of the task."""


class Ports(Protocol):
    """What the strategy needs of the session that runs it."""

    @property
    def environment(self) -> ExecutionEnvironment:
        """The user's workspace (read here; written only through :meth:`call`)."""

    @property
    def ran(self) -> list[str]:
        """Commands this session ran successfully (their reruns are checks); appended to here."""

    async def draft(self, messages: list[Message], *, seed: int | None, temperature: float,
                    grammar: str, max_tokens: int, until: Callable[[str], int | None] | None = None) -> str:
        """The model's reply to ``messages`` (one model call: events, budget, retries, cancel),
        at most ``max_tokens`` long, stopped where ``until`` (given the text so far) says the
        rest would not be read; :class:`DraftsExhausted` when no more calls are allowed."""

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Run a tool call through the session's pipeline: (output, is_error)."""

    def say(self, message: str) -> None:
        """Tell the user what happens, in plain words."""

    def steering(self) -> list[str]:
        """The user's steering messages queued since the last call (taken)."""

    async def judge(self, before: Mapping[str, str], changes: Mapping[str, str | None],
                    ran: Sequence[str], baseline: Baseline) -> list[CheckResult]:
        """All checks of one candidate, run in a scratch copy of the workspace."""


@dataclass
class Baseline:
    """Which of the project's scripts ran cleanly when the input began (path → it did): a
    script that did and fails after a candidate was broken by this input's changes. Filled
    while ``pristine`` (the workspace as the input found it: nothing written or run yet)."""

    ran_cleanly: dict[str, bool] = field(default_factory=dict)
    pristine: bool = True


class DraftsExhausted(Exception):
    """No more model calls: ``round_limit`` (``max_model_calls_per_input`` of this input) or
    ``turn_limit`` (``max_turns`` of the session: each draft is a turn, as each model call of
    the tool loop is)."""

    def __init__(self, reason: str = "round_limit") -> None:
        super().__init__(reason)
        self.reason = reason


def draft_tokens(files: Sequence[tuple[str, str]]) -> int:
    """The longest draft asked for: room to rewrite every file shown, whole (a token is about 3
    characters of code), and at least :data:`MIN_DRAFT_TOKENS`. A small model that repeats
    itself stops there instead of at the profile's limit (minutes of CPU)."""
    return max(MIN_DRAFT_TOKENS, sum(len(text) for _path, text in files) // 3 + 256)


@dataclass
class Report:
    """What the input did, as codeloop reports it (the answer)."""

    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    ran: list[tuple[str, bool]] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    """The checks of the last change applied."""
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = []
        if self.changed:
            lines.append("Changed " + ", ".join(dict.fromkeys(self.changed)) + ".")
        if self.deleted:
            lines.append("Deleted " + ", ".join(dict.fromkeys(self.deleted)) + ".")
        for command, ok in self.ran:
            lines.append(f"Ran `{command}`: " + ("exit 0." if ok else "it failed."))
        if self.checks:
            passed = [r.check.name for r in self.checks if r.passed]
            failed = [r.check.name for r in self.checks if not r.passed]
            if passed:
                lines.append("Checks passed: " + ", ".join(passed) + ".")
            if failed:
                lines.append("Checks failed: " + ", ".join(failed) + ".")
        lines += self.notes
        return "\n".join(lines) or "Nothing was changed and nothing ran."


@dataclass
class _Draft:
    text: str
    reply: Reply | None
    problem: str = ""
    """Why it cannot be used (outside the format, a hunk that does not apply)."""
    changes: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnOutcome:
    """How the input ended: ``reason`` as SESSION_END says it, and the answer."""

    reason: str
    answer: str


def _shown(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT_SHOWN else "[...]\n" + text[-MAX_OUTPUT_SHOWN:]


def _prompt(task: str, files: Sequence[tuple[str, str]], project_map: str) -> str:
    parts = []
    if files:
        parts.append("# Files of the task\n" + "\n\n".join(f"FILE {path}\n```\n{text}{'' if text.endswith(chr(10)) or not text else chr(10)}```"
                                                             for path, text in files))
    if project_map:
        parts.append(project_map)
    parts.append("# Task\n" + task)
    return "\n\n".join(parts)


def _good(candidate: Candidate) -> bool:
    return candidate.failed == 0 and bool(candidate.changes)


def _failing_output(candidate: Candidate, draft: _Draft) -> str:
    if draft.problem:
        return draft.problem
    return next((f"{r.check.name}:\n{r.output}" for r in candidate.results if not r.passed), "")


class SmallModelTurn:
    """One input through the strategy (module docstring)."""

    def __init__(self, ports: Ports, config: StrategyConfig | None = None) -> None:
        self.ports = ports
        self.config = config or StrategyConfig()
        self.report = Report()
        self._files: dict[str, str | None] = {}
        """Texts read so far (path → text, None: no such file), updated as changes are written."""
        self._before: dict[str, str] | None = None
        self._max_tokens = MIN_DRAFT_TOKENS
        self._baseline = Baseline()

    async def _read(self, path: str) -> str | None:
        if path not in self._files:
            try:
                data = await ops.read_bytes(self.ports.environment, path, max_bytes=1_000_000)
                self._files[path] = data.decode("utf-8")
            except (WorkspaceError, OSError, UnicodeDecodeError):
                self._files[path] = None
        return self._files[path]

    async def _project(self, listing: Sequence[str]) -> dict[str, str]:
        """The project's Python files (path → text), read once per input."""
        if self._before is None:
            self._before = {}
            for path in [p for p in listing if module_of(p) is not None][:MAX_PROJECT_FILES]:
                if (text := await self._read(path)) is not None:
                    self._before[path] = text
        return self._before

    async def _draft(self, messages: list[Message], seed: int | None, temperature: float) -> _Draft:
        text = await self.ports.draft(list(messages), seed=seed, temperature=temperature, grammar=GRAMMAR,
                                      max_tokens=self._max_tokens, until=repeated_block)
        reply: Reply | None
        try:
            reply = parse_reply(text)
        except ReplyFormatError as exc:
            reply = complete_blocks(text)
            if reply is None:
                return _Draft(text, None, f"the reply is not in the format ({exc})")
        if isinstance(reply, FilesReply):
            if (reply := without_examples(reply)) is None:
                return _Draft(text, None, "the reply only repeats the examples of the reply format")
            texts = {b.path: await self._read(b.path) for b in reply.files}
            try:
                new = apply_reply(reply, texts.get)
            except HunkError as exc:
                return _Draft(text, reply, str(exc))
            return _Draft(text, reply, changes=changed_only(new, texts.get))
        return _Draft(text, reply)

    async def _judged(self, index: int, draft: _Draft, listing: Sequence[str]) -> Candidate:
        if draft.problem or not draft.changes:
            return Candidate(index, {})
        before = dict(await self._project(listing))
        for path in draft.changes:
            if path not in before and (text := await self._read(path)) is not None:
                before[path] = text
        results = await self.ports.judge(before, draft.changes, list(self.ports.ran), self._baseline)
        return Candidate(index, draft.changes, tuple(results))

    def _describe(self, candidate: Candidate, draft: _Draft) -> str:
        if draft.problem:
            return f"cannot be applied: {draft.problem}"
        if not draft.changes:
            return "changes nothing"
        if not candidate.results:
            return "no check found for it"
        failed = [r.check.name for r in candidate.results if not r.passed]
        if failed:
            return f"{candidate.failed} of {candidate.passed + candidate.failed} checks failed ({', '.join(failed)})"
        passed = "1 check passed" if candidate.passed == 1 else f"{candidate.passed} checks passed"
        return f"{passed} ({', '.join(r.check.name for r in candidate.results)})"

    async def _candidates(self, messages: list[Message], greedy: _Draft,
                          listing: Sequence[str]) -> tuple[Candidate, _Draft] | None:
        """The greedy candidate, and when it fails, the samples and the repair; the chosen one."""
        drafts = {0: greedy}
        candidates = [await self._judged(0, greedy, listing)]
        self.ports.say(f"draft 1: {self._describe(candidates[0], greedy)}")
        if not _good(candidates[0]) and self.config.samples > 0:
            total = 1 + self.config.samples
            for n in range(1, total):
                self.ports.say(f"drafting candidate {n + 1} of {total}")
                drafts[n] = await self._draft(messages, n, self.config.temperature)
                candidates.append(await self._judged(n, drafts[n], listing))
                self.ports.say(f"draft {n + 1}: {self._describe(candidates[-1], drafts[n])}")
        if not any(_good(c) and c.passed for c in candidates) and self.config.repair:
            best = choose([c for c in candidates if c.changes]) or candidates[0]
            failing = _failing_output(best, drafts[best.index])
            if failing:
                self.ports.say("repair round: the failing check's output goes back to the model")
                repair = [*messages, Message.assistant(drafts[best.index].text),
                          Message.user("This did not work:\n" + _shown(failing)
                                       + "\nReply with FILE blocks that fix it.")]
                n = len(drafts)
                drafts[n] = await self._draft(repair, None, 0.0)
                candidates.append(await self._judged(n, drafts[n], listing))
                self.ports.say(f"repair draft: {self._describe(candidates[-1], drafts[n])}")
        usable = [c for c in candidates if c.changes]
        chosen = choose(usable)
        if chosen is None:
            return None
        if len(candidates) > 1:
            self.ports.say(f"chose draft {chosen.index + 1} of {len(candidates)}")
        return chosen, drafts[chosen.index]

    async def _apply(self, chosen: Candidate) -> bool:
        """Write the chosen change through the pipeline; False when a write was refused."""
        self._baseline.pristine = False
        for path, text in chosen.changes.items():
            if text is None:  # a DELETE line: the patch tool is the pipeline's one way to remove a file
                patch = f"*** Begin Patch\n*** Delete File: {path}\n*** End Patch\n"
                output, is_error = await self.ports.call("apply_patch", {"patch": patch})
            else:
                output, is_error = await self.ports.call("write_file", {"file_path": path, "content": text})
            if is_error:
                self.report.notes.append(f"{'Writing' if text is not None else 'Deleting'} {path} failed: "
                                         f"{output.strip()}")
                return False
            self._files[path] = text
            if self._before is not None and module_of(path) is not None:
                if text is None:
                    self._before.pop(path, None)
                else:
                    self._before[path] = text
            (self.report.changed if text is not None else self.report.deleted).append(path)
        self.report.checks = list(chosen.results)
        return True

    async def _run_command(self, command: str) -> str:
        self._baseline.pristine = False
        output, is_error = await self.ports.call("shell", {"command": command})
        self.report.ran.append((command, not is_error))
        if not is_error:
            self.ports.ran.append(command)
        self._files.clear()  # the command may have changed files
        self._before = None
        return output

    async def run(self, task: str) -> TurnOutcome:
        """Process one input ``task``."""
        try:
            return await self._input(task)
        except DraftsExhausted as stop:
            self.report.notes.append("Stopped: the turn limit of the session was reached." if stop.reason == "turn_limit"
                                     else "Stopped: the model-call limit of this input was reached.")
            return TurnOutcome(stop.reason, self.report.render())

    async def _input(self, task: str) -> TurnOutcome:
        context = await gather_plain_context(self.ports.environment, task, self.config.context_chars)
        for path, text in context.files:
            self._files[path] = text
        self._max_tokens = draft_tokens(context.files)
        messages = [Message.system(SYSTEM_PROMPT), Message.user(_prompt(task, context.files, context.map))]
        replied: set[str] = set()
        for step in range(self.config.steps):
            for note in self.ports.steering():
                messages.append(Message.user(f"A note from the user: {note}"))
            self.ports.say("drafting" if not (self.report.changed or self.report.deleted) else "drafting the next step")
            greedy = await self._draft(messages, None, 0.0)
            for n in range(1, self.config.samples + 1):
                if greedy.text not in replied:
                    break
                # The greedy draft repeats a reply of this input word for word: a loop (greedy
                # decoding gives it again and again); a seeded sample may leave it.
                self.ports.say(f"the draft repeats an earlier reply: drafting with a seed ({n} of {self.config.samples})")
                greedy = await self._draft(messages, 100 * (step + 1) + n, self.config.temperature)
            replied.add(greedy.text)
            if isinstance(greedy.reply, DoneReply):
                return TurnOutcome("completed", self.report.render())
            if isinstance(greedy.reply, RunReply):
                output = await self._run_command(greedy.reply.command)
                messages += [Message.assistant(greedy.text),
                             Message.user(f"Output of `{greedy.reply.command}`:\n{_shown(output)}\n\n"
                                          "Reply with FILE blocks, one RUN line, or DONE.")]
                continue
            picked = await self._candidates(messages, greedy, context.listing)
            if picked is None:
                messages += [Message.assistant(greedy.text),
                             Message.user(f"That reply could not be used: {greedy.problem or 'it changes nothing'}. "
                                          "Reply again in the format.")]
                continue
            chosen, draft = picked
            if not await self._apply(chosen):
                return TurnOutcome("completed", self.report.render())
            assert isinstance(draft.reply, FilesReply)
            checks = "; ".join(f"{r.check.name}: {'passed' if r.passed else 'failed'}" for r in chosen.results)
            failing = [f"{r.check.name}:\n{r.output}" for r in chosen.results if not r.passed]
            if failing:
                # The change went in with a failing check: the next step sees why, as a repair would.
                follow = ("Applied, but a check failed:\n" + _shown("\n".join(failing))
                          + "\nReply with FILE blocks that fix it, or DONE if the task is complete.")
            else:
                follow = (f"Applied{f' ({checks})' if checks else ''}. Reply DONE if the task is "
                          "complete; otherwise the next FILE blocks or one RUN line.")
            messages += [Message.assistant(render_reply(draft.reply)), Message.user(follow)]
        self.report.notes.append(f"Stopped after {self.config.steps} drafts without DONE.")
        return TurnOutcome("completed" if self.report.changed or self.report.deleted or self.report.ran
                           else "round_limit",
                           self.report.render())


async def judge_in_scratch(environment: ExecutionEnvironment, before: Mapping[str, str],
                           changes: Mapping[str, str | None], ran: Sequence[str], baseline: Baseline | None = None, *,
                           network: bool = False, timeout_ms: int = 60_000, policy: ToolPolicy | None = None,
                           approvals: Approvals | None = None) -> list[CheckResult]:
    """:func:`.judge.judge` in a fresh scratch workspace of ``environment``'s root (overlay or
    copy, :func:`codeloop.environments.scratch.open_scratch`), removed afterwards. Where no
    sandbox can run, the checks that run code run in an unsandboxed copy only through
    ``policy`` and ``approvals`` (the session's: each asks the user like any command, and one
    "always" can cover them); without a policy only the checks read here (parse, imports)
    count: nothing runs on the user's machine unasked."""
    from codeloop.agent.small_model.checks import affected_scripts, import_checks, parse_checks, script_check
    from codeloop.agent.small_model.judge import run_command_checks
    from codeloop.environments.errors import SandboxUnavailableError
    from codeloop.environments.scratch import CopiedScratchEnvironment, open_scratch

    root = environment.working_directory()
    scratch = open_scratch(root, network=network)
    after = {p: t for p, t in {**before, **changes}.items() if t is not None}
    try:
        try:
            await scratch.initialize()
        except SandboxUnavailableError:
            if policy is None:
                return parse_checks(changes) + import_checks(after, changes)
            await scratch.cleanup()
            scratch = CopiedScratchEnvironment(root, sandboxed=False)
            try:
                await scratch.initialize()
            except WorkspaceError:
                return parse_checks(changes) + import_checks(after, changes)
            await scratch.stage(changes)
            return await judge(scratch, before, changes, ran, timeout_ms=timeout_ms, policy=policy,
                               approvals=approvals)
        except WorkspaceError:
            return parse_checks(changes) + import_checks(after, changes)
        # The baseline: which affected scripts run cleanly before the change (the scratch holds
        # the workspace as it is until the candidate is staged).
        baseline = baseline or Baseline()
        paths = affected_scripts(before, after, changes)
        unknown = [p for p in paths if p not in baseline.ran_cleanly] if baseline.pristine else []
        if unknown:
            found = await run_command_checks(scratch, [script_check(p) for p in unknown],
                                             timeout_ms=min(timeout_ms, SCRIPT_BASELINE_MS))
            baseline.ran_cleanly |= {path: result.passed for path, result in zip(unknown, found, strict=True)}
        scripts = [p for p in paths if baseline.ran_cleanly.get(p)]
        await scratch.stage(changes)
        return await judge(scratch, before, changes, ran, timeout_ms=timeout_ms, scripts=scripts)
    finally:
        await scratch.cleanup()
