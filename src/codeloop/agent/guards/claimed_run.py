"""Turn guard: a final answer that says a command ran when none did (issue 20).

Seen with the 1.5B model on "Delete the file obsolete.txt": its `delete_file` call was
refused (no such tool; the answer named `shell` with `rm -- obsolete.txt`), it replied
empty twice and then answered "I called the shell tool with the command `rm -- obsolete.txt`
to delete the file" with the file still there. The claim check looks for files said to be
changed; this one looks for a command the answer says ran (``I ran `X` ``, ``by running
`X` ``, `` `X` was executed``) whose program is one of :data:`PROGRAMS`.

When this input ran no such command, codeloop makes the call the answer describes, once per
input: the model said it meant to run it, so it runs as the model's own call would, through
the pipeline (policy, approval, sandbox, events), announced by a ``warning`` event with code
``verify``; the model then answers after its output. Small-model sessions only.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, rescues_on, run_instead
from codeloop.agent.guards.verify_answer import RUNNERS
from codeloop.agent.guards.work_report import ran_command
from codeloop.agent.history import CallResult
from codeloop.agent.reply_reader import Reply
from codeloop.llm.types import ToolCall

if TYPE_CHECKING:
    from codeloop.agent.session import Session

PROGRAMS = RUNNERS | frozenset("rm rmdir mv cp mkdir touch ln chmod cat echo ls sed git".split())
"""Programs whose command line, said to have run, is a command (a tool's or a function's
name in backticks is not)."""

_ADVERBS = r"(?:(?:have|had|then|also|now|just|successfully|first|finally|already)\s+)*"
_CLAIMED = re.compile(
    rf"\b(?:I|we)\s+{_ADVERBS}(?:ran|run|executed|called|used|invoked)\b[^`\n.!?]{{0,60}}`(?P<a>[^`\n]+)`"
    r"|\bby\s+(?:running|executing|calling|using)\b[^`\n.!?]{0,40}`(?P<b>[^`\n]+)`"
    r"|`(?P<c>[^`\n]+)`\s+(?:was|has\s+been)\s+(?:successfully\s+)?(?:run|executed)\b",
    re.IGNORECASE,
)


def claimed_commands(text: str) -> list[str]:
    """The commands ``text`` says were run, in order (their program in :data:`PROGRAMS`)."""
    found = []
    for match in _CLAIMED.finditer(text):
        command = " ".join((match.group("a") or match.group("b") or match.group("c")).split())
        words = command.split()
        if words and (words[0] in PROGRAMS or words[0].startswith("./")) and command not in found:
            found.append(command)
    return found


class ClaimedRun(TurnGuard):
    def __init__(self) -> None:
        self.ran: set[str] = set()
        """Commands started this input, spaces collapsed."""
        self.done = False

    def applies(self, session: Session) -> bool:
        return rescues_on(session) and session.profile.tool_registry.get("shell") is not None

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        self.ran |= {" ".join(str(call.arguments["command"]).split())
                     for call, result in zip(calls, results, strict=True) if ran_command(call, result)}
        return ACCEPT

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        if reply.calls or self.done:
            return ACCEPT
        missing = [c for c in claimed_commands(reply.text) if c not in self.ran]
        if not missing:
            return ACCEPT
        self.done = True
        return run_instead(ToolCall(f"claimed-{uuid.uuid4().hex[:8]}", "shell", {"command": missing[0]}),
                           f"the answer says `{missing[0]}` ran, and no such command ran: codeloop runs it")
