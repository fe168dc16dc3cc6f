"""Turn guards: the small-model rescues the session's loop runs (see :mod:`.base`).

A new guard is a new module with a :class:`TurnGuard` subclass and one entry below.
"""

from __future__ import annotations

from collections.abc import Callable

from codeloop.agent.guards.already_done import AlreadyDone
from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, end, nudge, run_instead
from codeloop.agent.guards.broken_write import BrokenWrite
from codeloop.agent.guards.echo_reply import EchoReply
from codeloop.agent.guards.empty_reply import EmptyReplyNudge
from codeloop.agent.guards.kept_definitions import KeptDefinitions
from codeloop.agent.guards.loop_warning import LoopWarning
from codeloop.agent.guards.retarget_edit import RetargetEdit
from codeloop.agent.guards.task_files import TaskFiles
from codeloop.agent.guards.work_report import WorkReport

DEFAULT_GUARDS: tuple[Callable[[], TurnGuard], ...] = (
    TaskFiles, AlreadyDone, RetargetEdit, EchoReply, EmptyReplyNudge, LoopWarning, KeptDefinitions, BrokenWrite,
    WorkReport)
"""In order: ``after_reply`` asks them in this order and the first that does not accept decides
(WorkReport last: it reports on the answer the others accepted). None of them reads the task's
wording or the model's prose to decide what to write or run (issue 33 removed those: StubLeft,
ExamplesCheck, NewScript, RenameLeft, GoneModule, ClaimedRun, ClaimCheck, VerifyBeforeAnswer;
docs/local-models.md, "Removed rescues")."""

__all__ = ["ACCEPT", "DEFAULT_GUARDS", "GuardAction", "Turn", "TurnGuard", "end", "nudge", "run_instead"]
