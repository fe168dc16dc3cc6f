"""Turn guard: a new script the task asks for is drafted alone first (issue 20).

Asked to "Write a script colsum.py that prints the sum of one column of a CSV file, given the
file and the column name", the 1.5B model sent ``read_file`` of the CSV with an invented
``column`` argument four times and was stopped with nothing written (dev task 36 at 7f04daa).
The same model, asked in a chat for a whole program, writes one in a fenced block; inside the
tool loop it tries to do the task's work itself instead of writing the program that does it.

So when the task asks to write or create one new Python or shell script (:func:`wanted_script`:
``Write a script colsum.py that ...``, ``Create hello.py that prints hello``) that does not
exist yet, the model's first reply is replaced by the script drafted alone (unless that reply
writes the script itself, with content that parses), in the chat form
the model is good at (the task, the other files it names, then "Write the complete file
colsum.py"; no tools, no history: :meth:`Session.ask_alone`), written with ``write_file``
through the pipeline (policy, approval, diff, events), announced by a ``warning`` event with
code ``verify``. The model then goes on from the file written: the task's own command is run
before the answer (:mod:`.verify_answer`), and a failing run is its to fix. A draft with no
fenced block, or Python that does not parse, is dropped and the reply's own calls run. Once per
input; small-window sessions only (``Session.small_model``).
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING

from codeloop.agent.claims import file_names
from codeloop.agent.file_edits import content_problem
from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, rescues_on, run_instead
from codeloop.agent.guards.kept_definitions import exists, file_text
from codeloop.agent.guards.verify_answer import call_form
from codeloop.agent.named_blocks import fenced_bodies
from codeloop.agent.reply_reader import Reply
from codeloop.llm.errors import SDKError
from codeloop.llm.types import ToolCall
from codeloop.tools.files import WRITE_FILE

if TYPE_CHECKING:
    from codeloop.agent.session import Session

_SCRIPT = r"`?(?P<path>[\w./-]+\.(?:py|sh))`?"
_WANTED = re.compile(
    r"\b(?:write|create|make|add)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+|small\s+|short\s+|simple\s+)*"
    r"(?:(?:python3?|bash|shell|command[- ]line)\s+)?(?:script|program|tool|file|cli)\s+(?:called\s+|named\s+)?"
    + _SCRIPT
    + r"|\b(?:write|create)\s+" + _SCRIPT.replace("path", "bare") + r"\s+(?:that|which|to)\b",
    re.IGNORECASE)
MAX_CONTEXT_CHARS = 6_000
"""The other files the task names go with the request up to this size (about a quarter of an
8 k window), so the draft knows the data it reads."""


def wanted_script(task: str) -> str | None:
    """The one new script ``task`` asks to write, None when it asks for none or several."""
    paths = list(dict.fromkeys((m.group("path") or m.group("bare")).removeprefix("./") for m in _WANTED.finditer(task)))
    return paths[0] if len(paths) == 1 else None


def drafted_script(answer: str, path: str) -> str | None:
    """The file in the first fenced block of ``answer`` that can be ``path``'s content."""
    for body in fenced_bodies(answer):
        if body.strip() and content_problem(path, body) is None:
            return body if body.endswith("\n") else body + "\n"
    return None


class NewScript(TurnGuard):
    def __init__(self) -> None:
        self.path: str | None = None
        self.replied = False

    def applies(self, session: Session) -> bool:
        return rescues_on(session) and session.profile.tool_registry.get(WRITE_FILE) is not None

    async def before_input(self, turn: Turn) -> str:
        self.path = wanted_script(turn.task)
        return ""

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        first, self.replied = not self.replied, True
        if not first or self.path is None:
            return ACCEPT
        session, path = turn.session, self.path
        if await exists(session, path) or _writes(reply, path):
            return ACCEPT
        context = ""
        for name in file_names(turn.task):
            other = name.removeprefix("./")
            if other != path and (text := await file_text(session, other)) is not None:
                context += f"{other}:\n```\n{text}```\n"
        if len(context) > MAX_CONTEXT_CHARS:
            context = ""
        # "exactly": a drafted colsum.py printed "The sum of the 'amount' column is: 385"
        # where the task asked for the sum (dev task 36, at 5f2d257).
        prompt = f"{turn.task.strip()}\n\n{context}Write the complete file {path}. Where the task says what it " \
                 "prints, it prints exactly that and nothing more. Reply with the whole file in one fenced code block."
        try:
            content = drafted_script(await session.ask_alone(prompt), path)
        except SDKError:  # the conversation's own next request reports a lasting failure
            return ACCEPT
        if content is None:
            return ACCEPT
        call = ToolCall(f"draft-{uuid.uuid4().hex[:8]}", WRITE_FILE, {"file_path": path, "content": content})
        written = "" if not reply.calls or session.profile.native_tool_calls else call_form(
            session, call.name, {"file_path": path, "content": content})
        return run_instead(call, f"the task asks for a new script {path}: codeloop asked the model for the whole "
                                 "file alone and writes its answer", written)


def _writes(reply: Reply, path: str) -> bool:
    """True when the reply's own calls write ``path`` with content that can be its content."""
    for call in reply.calls:
        content = call.arguments.get("content")
        if call.name == WRITE_FILE and str(call.arguments.get("file_path", "")).removeprefix("./") == path \
                and isinstance(content, str) and content.strip() and content_problem(path, content) is None:
            return True
    return False

