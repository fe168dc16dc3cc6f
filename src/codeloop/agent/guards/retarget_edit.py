"""Turn guard: an edit repeated at the wrong file is made at the file that holds its text (issue 20).

Asked to fix ``stats.py`` "so that test_stats.py passes", the 1.5B model sent the fix to
``test_stats.py``. ``edit_file`` answered that the exact text is in ``stats.py``
(:func:`codeloop.tools.edit._found_elsewhere`); the model sent the same call again, seven
times, until the loop limit. When a reply's only call is an ``edit_file`` identical to one of
this input that failed with that answer, codeloop makes the edit at the named file instead: a
call through the pipeline like the model's (policy, approval, events; announced by a
``warning`` event), and the model goes on from its result. Small-window sessions only, once
per input.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, rescues_on, run_instead
from codeloop.agent.history import CallResult
from codeloop.agent.reply_reader import Reply
from codeloop.agent.text_tool_calls import filled_example
from codeloop.llm.types import ToolCall
from codeloop.tools.edit import EDIT_FILE

if TYPE_CHECKING:
    from codeloop.agent.guards.base import SessionView

_ELSEWHERE = re.compile(r"^That exact text is in (.+?): if \1 is the file to change", re.M)


def call_form(session: SessionView, name: str, arguments: dict[str, str]) -> str:
    """The exact call as this session's model writes calls."""
    if session.constrained:
        return json.dumps({"tool": name, "arguments": arguments})
    if not session.profile.native_tool_calls:
        return filled_example(name, arguments)
    return f"{name} with arguments {json.dumps(arguments)}"


class RetargetEdit(TurnGuard):
    def __init__(self) -> None:
        self.misses: dict[str, str] = {}
        """Arguments (as text) of this input's failed edits whose error named the file holding the text."""
        self.done = False

    def applies(self, session: SessionView) -> bool:
        return rescues_on(session)

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        for call, result in zip(calls, results, strict=True):
            if call.name == EDIT_FILE and result.is_error and (found := _ELSEWHERE.search(result.content)):
                self.misses[_key(call)] = found.group(1)
        return ACCEPT

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        if self.done or len(reply.calls) != 1 or (target := self.misses.get(_key(reply.calls[0]))) is None:
            return ACCEPT
        self.done = True
        call = reply.calls[0]
        arguments = {**call.arguments, "file_path": target}
        written = "" if turn.session.profile.native_tool_calls else call_form(
            turn.session, EDIT_FILE, {k: str(v) for k, v in arguments.items()})
        return run_instead(ToolCall(f"retarget-{uuid.uuid4().hex[:8]}", EDIT_FILE, arguments),
                           f"the same edit of {call.arguments.get('file_path')} failed before and its text is in "
                           f"{target}: codeloop makes it there", written)


def _key(call: ToolCall) -> str:
    return f"{call.name} {sorted(call.arguments.items())!r}"
