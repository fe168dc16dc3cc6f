"""Turn guard: an edit that drops a definition the task did not ask to take away is pointed out (issue 20).

Asked to *add* a function, the 1.5B model replaced the line ``def square(x):`` with
``def is_even(n):``, losing the function the task said to keep, and answered "added". The
result of such a write or edit is followed by one note naming what went missing, so the model
can put it back before it answers. What counts: a ``def``/``class``/``function`` name (or a
name a Python import line brought in) that the file defined before the call and no longer
defines after it, that the task text does not
mention when it asks to rename, remove, replace, move, merge, inline, split or extract
something (such a task names what goes); in any other task, a name the task mentions counts
too (asked to implement `f`, the model renamed it). At most one note per file and
input; small-window sessions only (``Session.small_model``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, nudge, rescues_on
from codeloop.agent.history import CallResult
from codeloop.environments.errors import WorkspaceError
from codeloop.llm.types import ToolCall
from codeloop.policy.approval import Effect, ToolCallRequest
from codeloop.tools import workspace_ops as ops
from codeloop.tools.effects import call_paths
from codeloop.tools.registry import ToolOutput

if TYPE_CHECKING:
    from codeloop.agent.guards.base import SessionView

_DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class|function)[ \t]+([A-Za-z_]\w*)", re.M)
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]+([^\n#;]+)", re.M)
_CHANGES_NAMES = re.compile(r"\b(?:renam|remov|delet|drop|replac|mov|merg|inlin|split|extract|consolidat|get\s+rid)",
                            re.IGNORECASE)
"""Words of a task that may take a definition away (``rename``, ``removes``, ``moving``...)."""
MAX_FILE_BYTES = 256 * 1024
"""Larger files are not compared (a small model's tasks touch small files)."""


def definitions(text: str) -> set[str]:
    """Names defined in ``text`` by a ``def``, ``class`` or ``function`` line, or imported by a
    Python ``import``/``from ... import`` line (a whole-file rewrite by the 1.5B model dropped
    ``from typing import List`` and kept using ``List``: a NameError)."""
    names = set(_DEFINITION.findall(text))
    for match in _IMPORT.finditer(text):
        for part in match.group(1).strip("() \t").split(","):
            name = part.split(" as ")[-1].strip()
            if re.fullmatch(r"[A-Za-z_]\w*", name):
                names.add(name)
    return names


class KeptDefinitions(TurnGuard):
    def __init__(self) -> None:
        self.before: dict[str, set[str]] = {}
        """Per path, the names defined before the pending editing call."""
        self.noted: set[str] = set()

    def applies(self, session: SessionView) -> bool:
        return rescues_on(session)

    async def before_call(self, call: ToolCallRequest, turn: Turn) -> ToolOutput | None:
        if Effect.WRITE in call.effects:
            for path in written_paths(turn.session, call):
                if (text := await file_text(turn.session, path)) is not None:
                    self.before[path] = definitions(text)
        return None

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        lost: list[str] = []
        # A name the task mentions may go when the task renames or removes something; else the
        # task's own names matter most (seen on HumanEval/33: asked to implement `sort_third`,
        # the 1.5B model renamed it to `sort_third_modified`).
        mentioned = set(re.findall(r"\w+", turn.task)) if _CHANGES_NAMES.search(turn.task) else set()
        for path, names in list(self.before.items()):
            del self.before[path]
            after = await file_text(turn.session, path)
            gone = sorted(n for n in names - definitions(after or "") if n not in mentioned)
            if after is not None and gone and path not in self.noted:
                self.noted.add(path)
                lost.append(f"{path} no longer defines {', '.join(f'`{n}`' for n in gone)}")
        if not lost:
            return ACCEPT
        return nudge(f"Note: after that change, {'; '.join(lost)}, which the task did not ask to remove. "
                     "Keep the existing code: put back what went missing, exactly as it was, and add the new "
                     "code beside it.")


def written_paths(session: SessionView, call: ToolCall | ToolCallRequest) -> list[str]:
    """The workspace paths ``call`` writes, by its tool's declaration (``codeloop.tools.effects``):
    none for reads, and none for a shell line or an MCP call, whose paths nobody can name."""
    request = call if isinstance(call, ToolCallRequest) else session.profile.tool_registry.request(
        call.name, dict(call.arguments))
    if Effect.WRITE not in request.effects:
        return []
    return call_paths(request, Path(session.environment.working_directory()))


async def file_text(session: SessionView, path: str) -> str | None:
    """The text of a workspace file, None when unreadable, binary or over MAX_FILE_BYTES."""
    try:
        data = await ops.read_bytes(session.environment, path)
    except (WorkspaceError, OSError):
        return None
    if len(data) > MAX_FILE_BYTES or b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", "build", "dist"})
"""Folders whose files are no project files a guard looks through (tools, caches, builds)."""
MAX_PROJECT_FILES = 200
"""Files a guard looks through at most (a small model's project is small; a large one is not walked)."""


async def project_files(session: SessionView, pattern: str) -> list[str]:
    """Workspace files matching ``pattern``, sorted, outside :data:`SKIPPED_DIRS`, at most
    :data:`MAX_PROJECT_FILES`; none when the workspace cannot be listed."""
    try:
        found = await session.environment.glob(pattern)
    except (WorkspaceError, OSError):
        return []
    return sorted(p for p in found if not SKIPPED_DIRS.intersection(Path(p).parts[:-1]))[:MAX_PROJECT_FILES]


async def exists(session: SessionView, path: str) -> bool:
    """Whether ``path`` exists in the workspace; True when that cannot be told (a guard then
    does nothing rather than act on a guess)."""
    try:
        return await session.environment.file_exists(path)
    except (WorkspaceError, OSError):
        return True
