"""Turn guard: a repeated identical read or write is answered "already done" (issue 20).

Small models that have done the work often keep going: they read the file again, write the
same content again, make the same edit again, until the time runs out. In the tool
pipeline's ANSWER step (after POLICY, so the call is still announced and judged) such a
call is not run but answered with what was already done:

- ``read_file`` of lines the model was shown this input (by an earlier read whose result is
  still whole in the history, or with the task's files) while the file's bytes are unchanged
  since: keyed on the file's fingerprint, so a read after any change runs;
- ``write_file`` whose content the file already holds;
- ``edit_file`` whose ``new_string`` is in the file and whose ``old_string`` is only there
  inside it.

The answer is an ordinary result, not an error: the model is told what it already has.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from codeloop.agent.guards.base import ACCEPT, GuardAction, Shown, Turn, TurnGuard, end, rescues_on
from codeloop.agent.guards.work_report import ALREADY_DONE, answered_already_done, describe_work
from codeloop.agent.history import CallResult, ToolResultsTurn
from codeloop.environments.errors import WorkspaceError
from codeloop.llm.types import ToolCall
from codeloop.policy.approval import ToolCallRequest
from codeloop.tools import workspace_ops as ops
from codeloop.tools.edit import EDIT_FILE
from codeloop.tools.files import DEFAULT_READ_LIMIT, READ_FILE, WRITE_FILE
from codeloop.tools.registry import ToolOutput

if TYPE_CHECKING:
    from codeloop.agent.guards.base import SessionView

MAX_CHECKED_BYTES = 2_000_000
"""Files larger than this are not compared (the call simply runs)."""
_NUMBERED = re.compile(r"^ *\d+ \| ", re.MULTILINE)
"""A line of read_file's output."""
GO_ON = "If the task is done, give your final answer now; otherwise go on with the next step."
MAX_REPEATS = 3
"""Tool rounds in a row answered only "already done" (or failing exactly as the round before)
that end the input: the model was told twice."""
REPEATS_STOPPED = "stopped: the model repeated work already done, or the same failing call, three times in a row"
"""The note of the input's end (a WARNING event with code ``loop_limit``)."""


def workspace_path(path: str, root: str) -> str:
    """``path`` relative to the workspace ``root`` when it lies there, normalized."""
    root = root.rstrip("/")
    if path.startswith(root + "/"):
        path = path[len(root) + 1:]
    return posixpath.normpath(path)


def line_count(data: bytes) -> int:
    """Lines as read_file numbers them (a last line without a newline counts)."""
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def _same_text(a: str, b: str) -> bool:
    """Equal but for line endings and a BOM (write_file keeps the file's own)."""
    return a.replace("\r\n", "\n").removeprefix("\ufeff") == b.replace("\r\n", "\n").removeprefix("\ufeff")


def edit_already_made(text: str, old: str, new: str) -> bool:
    """``text`` holds ``new`` and ``old`` only inside its copies of ``new``: the edit was made."""
    text = text.replace("\r\n", "\n")
    if not new.strip() or new not in text or old == new:
        return False
    return old not in text or (old in new and text.count(old) == text.count(new) * new.count(old))


def _whole(content: str, shown: Shown) -> bool:
    """The result shows every line it should (the TRUNCATE step cut none of them)."""
    return len(_NUMBERED.findall(content)) >= shown.last - shown.first + 1


class AlreadyDone(TurnGuard):
    def __init__(self) -> None:
        self.pending: dict[str, tuple[str, Shown]] = {}
        """Reads asked about and run this round: call id → (path, what it will show)."""
        self.kept: dict[str, str] = {}
        """Call id → the read's result as the history holds it (it must still be whole)."""
        self.repeats = 0
        """Tool rounds in a row whose every call was answered "already done", or failed again
        exactly as in the round before."""
        self.last_round: tuple[tuple[str, str, str], ...] = ()

    def applies(self, session: SessionView) -> bool:
        return rescues_on(session)

    async def before_call(self, call: ToolCallRequest, turn: Turn) -> ToolOutput | None:
        if call.name not in (READ_FILE, WRITE_FILE, EDIT_FILE):
            return None
        path = call.arguments.get("file_path")
        if not isinstance(path, str) or not path.strip():
            return None
        env = turn.session.environment
        try:
            data = await ops.read_bytes(env, path, max_bytes=MAX_CHECKED_BYTES)
        except (WorkspaceError, OSError):
            return None  # missing, a directory, outside: the tool says so itself
        if b"\0" in data[:8192]:
            return None
        rel = workspace_path(path, env.working_directory())
        if call.name == READ_FILE:
            return self._read(call, rel, data, turn)
        text = data.decode("utf-8", "replace")
        args: dict[str, Any] = call.arguments
        if call.name == WRITE_FILE and isinstance(args.get("content"), str) and _same_text(text, args["content"]):
            return ToolOutput(f"{ALREADY_DONE} {path} already holds this content; nothing was written. {GO_ON}")
        if (call.name == EDIT_FILE and isinstance(args.get("old_string"), str)
                and isinstance(args.get("new_string"), str)
                and edit_already_made(text, args["old_string"], args["new_string"])):
            return ToolOutput(f"{ALREADY_DONE} {path} already holds this change; nothing was edited. {GO_ON}")
        return None

    def _read(self, call: ToolCallRequest, rel: str, data: bytes, turn: Turn) -> ToolOutput | None:
        total = line_count(data)
        offset = call.arguments.get("offset") or 1
        limit = call.arguments.get("limit") or DEFAULT_READ_LIMIT
        if not isinstance(offset, int) or not isinstance(limit, int) or offset > total:
            return None
        last = min(offset + limit - 1, total)
        digest = ops.fingerprint(data)
        # Text only put in front of the task is not refused: the 1.5B model, its edit failed,
        # read the file to see it again and was told to look up (a dev task of the suite).
        for shown in reversed([s for s in turn.shown.get(rel, []) if s.step]):
            if (shown.digest == digest and shown.first <= offset and last <= shown.last
                    and self._still_shown(shown, turn)):
                return ToolOutput(f"{ALREADY_DONE} you read lines {shown.first}-{shown.last} of {rel} at step "
                                  f"{shown.step}; it has not changed since. Use that text instead of reading it "
                                  f"again. {GO_ON}")
        if call.call_id:
            self.pending[call.call_id] = (rel, Shown(offset, last, digest, turn.rounds, call.call_id))
        return None

    def _still_shown(self, shown: Shown, turn: Turn) -> bool:
        """A read's result still whole in the history (not shortened to fit the window)."""
        if shown.call_id is None:
            return True  # put in the input itself, which is never shortened
        kept = self.kept.get(shown.call_id)
        for past in reversed(turn.session.history.turns):
            if isinstance(past, ToolResultsTurn):
                for result in past.results:
                    if result.tool_call_id == shown.call_id:
                        return result.content == kept
        return False

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        for call, result in zip(calls, results, strict=True):
            read = self.pending.pop(call.id, None)
            if read is not None and not result.is_error and _whole(result.content, read[1]):
                turn.shown.setdefault(read[0], []).append(read[1])
                self.kept[call.id] = result.content
        done = bool(results) and all(answered_already_done(r) for r in results)
        # The same calls failing with the same errors as the round before are no progress either
        # (seen on HumanEval/33: one invalid job_output call five times in a row).
        round_ = tuple((c.name, repr(sorted(c.arguments.items())), r.content) for c, r in zip(calls, results, strict=True))
        failed_again = bool(results) and all(r.is_error for r in results) and round_ == self.last_round
        self.last_round = round_
        self.repeats = self.repeats + 1 if done or failed_again else 0
        if self.repeats < MAX_REPEATS:
            return ACCEPT
        # Seen on HumanEval/1: the function written, the 1.5B model wrote the same file four
        # more times, each answered "already done ... give your final answer now", until its
        # time ran out. Told twice, a third time ends the input with what its calls did.
        session = turn.session
        turn.answer = f"{REPEATS_STOPPED[0].upper()}{REPEATS_STOPPED[1:]}. " + describe_work(session)
        return end("loop_limit", REPEATS_STOPPED)
