"""Turn guard: the answer of an input whose final text says nothing is what its calls did (issue 20).

A small model may end with an empty reply, or with its instructions, its tool list, a note
of the harness or a tool's error echoed back. The user would read that as the answer. Instead the input's
answer (``Session.last_text``, ``SESSION_END``'s ``final_text``) becomes a report built from
the input's calls: the files written and the commands run with their exit codes. It is
labelled as such, so it never passes for the model's words. An answer with content of its
own is kept.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, rescues_on
from codeloop.agent.guards.kept_definitions import written_paths
from codeloop.agent.history import AssistantTurn, CallResult, History, ToolResultsTurn, UserTurn
from codeloop.agent.reply_reader import Reply
from codeloop.llm.types import ToolCall

if TYPE_CHECKING:
    from codeloop.agent.guards.base import SessionView

NO_ANSWER = "No final answer from the model (its last reply was empty or repeated its instructions)."
EXIT_CODE = re.compile(r"\[exit code: (-?\d+)")
"""The exit-code line the shell tool ends a finished command's result with."""


def input_calls(history: History) -> list[tuple[ToolCall, CallResult]]:
    """The calls of the input being processed (since its user turn) with their results."""
    turns = history.turns
    start = max((i for i, t in enumerate(turns) if isinstance(t, UserTurn)), default=-1)
    calls: dict[str, ToolCall] = {}
    done: list[tuple[ToolCall, CallResult]] = []
    for turn in turns[start + 1:]:
        if isinstance(turn, AssistantTurn):
            calls.update((c.id, c) for c in turn.tool_calls)
        elif isinstance(turn, ToolResultsTurn):
            done += [(calls[r.tool_call_id], r) for r in turn.results if r.tool_call_id in calls]
    return done


def ran_command(call: ToolCall, result: CallResult) -> bool:
    """A call that started a command (its result tells how it ended)."""
    return isinstance(call.arguments.get("command"), str) and (
        not result.is_error or EXIT_CODE.search(result.content) is not None)


ALREADY_DONE = "already done:"
"""How a call the already_done guard answered instead of running begins its result."""


def answered_already_done(result: CallResult) -> bool:
    """True when ``result`` is the already_done guard's answer, not the tool's."""
    return result.content.startswith(ALREADY_DONE)


def changed_files(session: SessionView, call: ToolCall, result: CallResult) -> list[str]:
    """The files a successful call changed, by its tool's declaration (none for reads, for
    commands, whose paths nobody knows, and for "already done")."""
    if result.is_error or answered_already_done(result):
        return []
    return written_paths(session, call)


def describe_work(session: SessionView) -> str:
    """What the input's calls did: ``wrote a.py; ran `python3 a.py` (exit 0)``."""
    done = work_done(session)
    if not done:
        return "Nothing was changed and no command was run."
    return "What was done: " + "; ".join(done) + "."


def work_done(session: SessionView) -> list[str]:
    """The files the input's calls changed and the commands they ran, once each."""
    done: list[str] = []
    for call, result in input_calls(session.history):
        verb = "wrote" if "content" in call.arguments else "changed"  # a whole file's content, or an edit
        done += [f"{verb} {path}" for path in changed_files(session, call, result)]
        if ran_command(call, result):
            code = EXIT_CODE.search(result.content)
            done.append(f"ran `{call.arguments['command']}` "
                        f"({f'exit {code.group(1)}' if code else 'finished'})")
    return list(dict.fromkeys(done))


class WorkReport(TurnGuard):
    def applies(self, session: SessionView) -> bool:
        return rescues_on(session)

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        # An empty or echoed reply is judged by the echo guard (``turn.echo``); it kept the
        # model's own lines of an echo as ``turn.answer``.
        if not reply.calls and turn.echo:
            turn.answer = report_of_work(turn.session)
        return ACCEPT


def report_of_work(session: SessionView) -> str:
    """The answer that stands in for a final text that says nothing: what the calls did."""
    return f"{NO_ANSWER} {describe_work(session)}"
