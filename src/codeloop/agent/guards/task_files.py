"""Turn guard: the files a task names go in front of a small model (issue 20, "context up front").

Before the first request of an input, :func:`codeloop.agent.task_context.gather_task_context`
puts the named files (and, within the budget, their tests and imports; on the first input
the workspace map) before the task, numbered as read_file shows them. The budget is a
quarter of the context window, so the work keeps most of it. Files shown whole count as
read: write_file may replace them (``SeenFiles``) and a read_file of the same lines is
answered "already done" while the file is unchanged (:mod:`.already_done`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeloop.agent.guards.base import Shown, Turn, TurnGuard, rescues_on
from codeloop.agent.history import UserTurn
from codeloop.agent.task_context import gather_task_context
from codeloop.tools.files import SEEN_FILES

if TYPE_CHECKING:
    from codeloop.agent.guards.base import SessionView

CHARS_PER_TOKEN = 4
BUDGET_SHARE = 4
"""The context put in front takes at most 1/BUDGET_SHARE of the context window."""


class TaskFiles(TurnGuard):
    def applies(self, session: SessionView) -> bool:
        return rescues_on(session) and session.fixed_prompt is None

    async def before_input(self, turn: Turn) -> str:
        session = turn.session
        budget = session.profile.context_window_size * CHARS_PER_TOKEN // BUDGET_SHARE
        first = not any(isinstance(t, UserTurn) for t in session.history.turns)
        try:
            context = await gather_task_context(session.environment, turn.task, budget, with_map=first)
        except Exception:  # a rescue must never stop the input: the model can still read files itself
            return ""
        root = session.environment.working_directory()
        for file in context.files:
            turn.shown.setdefault(file.path, []).append(Shown(1, file.last, file.digest, 0))
            if file.whole and session.config.track_reads:
                SEEN_FILES.saw_path(session.id, root, file.path, file.digest)
        return context.text
