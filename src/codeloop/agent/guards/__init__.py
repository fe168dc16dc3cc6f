"""Turn guards: the small-model rescues the session's loop runs (see :mod:`.base`).

A new guard is a new module with a :class:`TurnGuard` subclass and one entry below.
"""

from __future__ import annotations

from collections.abc import Callable

from codeloop.agent.guards.already_done import AlreadyDone
from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, end, nudge, run_instead
from codeloop.agent.guards.broken_write import BrokenWrite
from codeloop.agent.guards.claim_check import ClaimCheck
from codeloop.agent.guards.claimed_run import ClaimedRun
from codeloop.agent.guards.echo_reply import EchoReply
from codeloop.agent.guards.empty_reply import EmptyReplyNudge
from codeloop.agent.guards.examples_check import ExamplesCheck
from codeloop.agent.guards.gone_module import GoneModule
from codeloop.agent.guards.kept_definitions import KeptDefinitions
from codeloop.agent.guards.loop_warning import LoopWarning
from codeloop.agent.guards.new_script import NewScript
from codeloop.agent.guards.rename_left import RenameLeft
from codeloop.agent.guards.retarget_edit import RetargetEdit
from codeloop.agent.guards.stub_left import StubLeft
from codeloop.agent.guards.task_files import TaskFiles
from codeloop.agent.guards.verify_answer import VerifyBeforeAnswer
from codeloop.agent.guards.work_report import WorkReport

DEFAULT_GUARDS: tuple[Callable[[], TurnGuard], ...] = (
    TaskFiles, AlreadyDone, RetargetEdit, StubLeft, ExamplesCheck, NewScript, RenameLeft, GoneModule, EchoReply, EmptyReplyNudge,
    ClaimedRun, ClaimCheck, LoopWarning, VerifyBeforeAnswer, KeptDefinitions, BrokenWrite, WorkReport)
"""In order: ``after_reply`` asks them in this order and the first that does not accept decides
(StubLeft, ExamplesCheck, NewScript, RenameLeft and GoneModule before EchoReply: an empty or echoed reply over
a stub the task names or its failing docstring examples, before a new script it asks for exists, over a rename left half done
or over the uses of a module it deletes, gets that work drafted, finished or pointed out;
ClaimedRun before ClaimCheck: a command the answer says ran is run, not argued about;
WorkReport last: it reports on the answer the others accepted)."""

__all__ = ["ACCEPT", "DEFAULT_GUARDS", "GuardAction", "Turn", "TurnGuard", "end", "nudge", "run_instead"]
