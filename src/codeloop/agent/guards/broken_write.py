"""Turn guard: a whole-file write that would leave a file that parses unparseable is refused (issue 20).

Seen with the 1.5B model (dev task 13, "add CURRENCY to settings.py and use it in invoice.py
and receipt.py"): it wrote each of the three files as one import line and a fenced
``obj['invoice_lines']``, losing every line of them; the diagnostics after the write said the
files no longer parsed, and the model went on. A small model's whole-file write whose content
does not parse, over a Python or JSON file that parses now, is answered instead of run:
nothing is written, and the model is told where its content fails and how to write it.
New files, files that do not parse already and edits of a part (``edit_file``,
whose steps may pass through a broken state) are left to the diagnostics after the call.
Small-model sessions only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeloop.agent.file_edits import content_problem
from codeloop.agent.guards.base import Turn, TurnGuard, rescues_on
from codeloop.environments.errors import WorkspaceError
from codeloop.tools import workspace_ops as ops
from codeloop.tools.files import WRITE_FILE
from codeloop.tools.registry import ToolOutput

if TYPE_CHECKING:
    from codeloop.agent.guards.base import SessionView
    from codeloop.policy.approval import ToolCallRequest

MAX_CHECKED_BYTES = 512 * 1024


class BrokenWrite(TurnGuard):
    def applies(self, session: SessionView) -> bool:
        return rescues_on(session)

    async def before_call(self, call: ToolCallRequest, turn: Turn) -> ToolOutput | None:
        path, content = call.arguments.get("file_path"), call.arguments.get("content")
        if call.name != WRITE_FILE or not isinstance(path, str) or not isinstance(content, str):
            return None
        wrong = content_problem(path, content)
        if wrong is None:
            return None
        try:
            data = await ops.read_bytes(turn.session.environment, path, max_bytes=MAX_CHECKED_BYTES)
        except (WorkspaceError, OSError):
            return None  # a new file, or one the tool refuses itself
        if b"\0" in data or content_problem(path, data.decode("utf-8", "replace")) is not None:
            return None
        kind = "JSON" if path.lower().endswith(".json") else "Python"
        return ToolOutput(
            f"Not written: the new content of {path} is not valid {kind} ({wrong}), "
            f"and {path} is valid {kind} now, so writing it would break the file. {path} is unchanged. "
            f"Write the whole file as plain {kind} (no ``` fences, every line of it), or change one part of it "
            "with edit_file.", is_error=True)
