"""Turn guard: a small model's reply that only repeats what it was sent is no answer (issue 20).

Small local models sometimes answer with the tool list, their system prompt or the error of
their last call copied back, or with nothing at all. Taken as the final answer, that ends
the task with nothing done and shows the copy to the user as the result. Such a reply is
sent back with one precise correction instead: what it repeated, and the exact form of a
tool call in this session's syntax (:mod:`codeloop.agent.call_forms`).

An echo is measured, never matched against fixed phrases: the share of the reply's words
that lie in a run of :data:`RUN` words also found in what the model was sent (the tool
descriptions, the system prompt, this input's error results), tool names counting as found
in the tool list. Small-window sessions only (``Session.small_model``); at most
:data:`MAX_CORRECTIONS` per input; the next such reply ends the input with a report of what
its calls did as the answer (:data:`NO_ANSWER` when they did nothing).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from codeloop.agent.call_forms import CallForms, placeholder
from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, end, nudge
from codeloop.agent.guards.work_report import report_of_work, work_done
from codeloop.agent.history import AssistantTurn, SteeringTurn, ToolResultsTurn, UserTurn
from codeloop.agent.reply_reader import Reply
from codeloop.policy.approval import ToolCallRequest
from codeloop.tools.registry import ToolOutput

if TYPE_CHECKING:
    from codeloop.agent.guards.base import SessionView

ECHO_SHARE = 0.6
"""A reply whose words lie this much (or more) in what the model was sent is an echo."""
MIN_WORDS = 4
"""Shorter replies are never judged an echo (a one-word answer may well repeat an output)."""
RUN = 3
"""Words in a row that must appear in the source for them to count as repeated."""
MAX_CORRECTIONS = 2
"""Corrections per input; the next empty or echoed reply ends it."""
NO_ANSWER = "no_answer"
"""End reason when the model keeps answering with nothing or with an echo."""
TASK_COPY_SHARE = 0.9
"""A reply whose words lie this much in the task message may be a copy of it ..."""
TASK_COPY_LENGTH = 0.6
"""... when it is at least this long, relative to the task's instruction."""
ERRORS_COMPARED = 5
"""This input's latest error results a reply is compared with."""

_WORD = re.compile(r"\w+")
_TAGGED_CALL = re.compile(r'<tool name="[^"\n]+">.*?</tool>', re.S)
TOOL_LIST, ERROR, PROMPT, NOTES, TASK, EMPTY = (
    "the tool list", "the error of your last tool call", "your system prompt", "codeloop's notes", "the task message", "")
MIN_WORDS_OF = {NOTES: 8}
"""Longer minimums per source: a short answer ("It is not done.") may well reuse a note's words."""


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` (``read_file`` is one word)."""
    return _WORD.findall(text.lower())


def repeated_share(reply: Sequence[str], source: str, names: Collection[str] = ()) -> float:
    """The share of ``reply``'s words that lie in a run of :data:`RUN` words of ``source``,
    or are one of ``names``; 0 for an empty reply."""
    if not reply:
        return 0.0
    found = words(source)
    runs = {tuple(found[i:i + RUN]) for i in range(len(found) - RUN + 1)}
    covered = [word in names for word in reply]
    for i in range(len(reply) - RUN + 1):
        if tuple(reply[i:i + RUN]) in runs:
            covered[i:i + RUN] = [True] * RUN
    return sum(covered) / len(reply)


def echoed(text: str, sources: Sequence[tuple[str, str, Collection[str]]]) -> str | None:
    """The label of the first source ``(label, text, names)`` that ``text`` repeats, else None."""
    reply = words(text)
    return next((label for label, source, names in sources
                 if len(reply) >= MIN_WORDS_OF.get(label, MIN_WORDS)
                 and repeated_share(reply, source, names) >= ECHO_SHARE), None)


def copies_task(text: str, message: str, task: str) -> bool:
    """``text`` is a copy of the task message, not an answer restating it.

    An answer says what was done in the task's own words ("The test in test_stats.py
    passes."), so most of its words repeat the task; a copy repeats nearly all of them and is
    about as long as the task at least."""
    reply = words(text)
    return (len(reply) >= max(MIN_WORDS, TASK_COPY_LENGTH * len(words(task)))
            and repeated_share(reply, message) >= TASK_COPY_SHARE)


def own_lines(text: str, sources: Sequence[tuple[str, str, Collection[str]]]) -> str:
    """The lines of ``text`` that repeat none of ``sources`` when, together, they make an
    answer (:data:`MIN_WORDS` or more); else "".

    Seen with the 1.5B model after a successful edit: the tool list copied back, then
    "I read the file settings.json and replaced ... with ...". The copy is no answer; the
    sentence after it is."""
    def copied(line: str) -> bool:
        return any(line.strip().lower() in source.lower() or repeated_share(words(line), source, names) >= ECHO_SHARE
                   for _, source, names in sources)

    kept = [line for line in text.splitlines() if line.strip() and not copied(line)]
    answer = "\n".join(kept).strip()
    return answer if len(words(answer)) >= MIN_WORDS and len(kept) < len(text.strip().splitlines()) else ""


def correction(what: str, example: str) -> str:
    """What the model is told: what its reply was, and the exact form to act or to finish."""
    said = "Your reply was empty." if what == EMPTY else f"Your reply repeated {what}; that is not an answer."
    if what == ERROR:
        said += " Fix the call as the error says."
    act = f" To act, make one tool call, for example:\n{example}\n" if example else " If the task needs more, make the next tool call. "
    return said + act + "To finish, reply with one or two sentences saying what you did."


class EchoReply(TurnGuard):
    def __init__(self) -> None:
        self.corrected = 0

    def applies(self, session: SessionView) -> bool:
        return session.small_model

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        turn.echo, turn.answer = False, None
        if reply.calls:
            return ACCEPT
        session = turn.session
        tools = session.profile.tools()
        errors, called = _this_input(session)
        sources = (
            (TOOL_LIST, session.profile.describe_tools(tools), {t.name for t in tools}),
            (ERROR, "\n".join(errors), ()),
            (PROMPT, session.system_prompt, ()),
            (NOTES, _steering(session), ()),
        )
        what = EMPTY if not reply.text.strip() else echoed(reply.text, sources) or (
            TASK if copies_task(reply.text, _task_message(session), turn.task) else None)
        if what is None:
            return ACCEPT
        if what != EMPTY and (kept := own_lines(reply.text, sources)):
            turn.answer = kept  # the echo around it is dropped; what the model said itself is the answer
            return ACCEPT
        turn.echo = True
        if self.corrected >= MAX_CORRECTIONS:
            # The user then reads what the calls did, labelled as such, not the echo: an input
            # whose calls did nothing ends as unanswered (exit 1); one that did work goes on to
            # the later guards (a named command still runs) and the work report answers.
            if self._worked(session):
                return ACCEPT
            turn.answer = report_of_work(session)
            return end(NO_ANSWER)
        self.corrected += 1
        if self._worked(session):
            # Work was done: the reply most likely meant "finished". A call template here is
            # copied literally by a 1.5B model (a file named FILE_PATH), so none is offered.
            return nudge(correction(what, ""))
        style = CallForms.style_of(session.constrained, session.profile.native_tool_calls)
        # The exact call an error just proposed ("Unknown tool: delete_file. ... call shell:
        # rm -- obsolete.txt") beats a generic form: offered read_file FILE_PATH instead, the
        # 1.5B model read the file and claimed it deleted.
        proposed = [m.group(0) for e in _last_errors(session) for m in _TAGGED_CALL.finditer(e)] if style == "tagged" else []
        forms = CallForms({t.name: t.parameters for t in tools}, style)
        return nudge(correction(what, proposed[0] if proposed else forms.example(tuple(reversed(called)))))

    @staticmethod
    def _worked(session: SessionView) -> bool:
        """The input's calls changed a file or ran a command."""
        return bool(work_done(session))

    async def before_call(self, call: ToolCallRequest, turn: Turn) -> ToolOutput | None:
        # A placeholder of an example form copied as a value is never run.
        copied = [name for name, value in call.arguments.items() if value == placeholder(name)]
        if not copied:
            return None
        return ToolOutput(f"Not run: {', '.join(placeholder(n) for n in copied)} is the placeholder of the example; "
                          "write the real value there.", is_error=True)


def _steering(session: SessionView) -> str:
    """What codeloop told the model during the current input (its corrections, its nudges)."""
    said: list[str] = []
    for past in reversed(session.history.turns):
        if isinstance(past, UserTurn):
            break
        if isinstance(past, SteeringTurn):
            said.append(past.content)
    return "\n".join(said)


def _task_message(session: SessionView) -> str:
    """The user turn of this input as the model saw it (the files put in front of the task too)."""
    return next((t.content for t in reversed(session.history.turns) if isinstance(t, UserTurn)), "")


def _last_errors(session: SessionView) -> list[str]:
    """The error results of the input's last tool round (none when it ended in a reply or input)."""
    for past in reversed(session.history.turns):
        if isinstance(past, ToolResultsTurn):
            return [r.content for r in past.results if r.is_error]
        if isinstance(past, UserTurn | SteeringTurn):
            return []
    return []


def _this_input(session: SessionView) -> tuple[list[str], list[str]]:
    """The latest error results of the current input, and the tools it called (in order)."""
    errors: list[str] = []
    called: list[str] = []
    for past in reversed(session.history.turns):
        if isinstance(past, UserTurn):
            break
        if isinstance(past, ToolResultsTurn) and len(errors) < ERRORS_COMPARED:
            errors += [r.content for r in past.results if r.is_error]
        elif isinstance(past, AssistantTurn):
            called[:0] = [c.name for c in past.tool_calls if c.parse_error is None]
    return errors[:ERRORS_COMPARED], called
