"""Turn guards: the small-model rescues the session's loop runs (see :mod:`.base`).

A new guard is a new module with a :class:`TurnGuard` subclass and one entry below.
"""

from __future__ import annotations

from collections.abc import Callable

from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, end, nudge
from codeloop.agent.guards.claim_check import ClaimCheck
from codeloop.agent.guards.echo_reply import EchoReply
from codeloop.agent.guards.empty_reply import EmptyReplyNudge
from codeloop.agent.guards.loop_warning import LoopWarning

DEFAULT_GUARDS: tuple[Callable[[], TurnGuard], ...] = (EchoReply, EmptyReplyNudge, ClaimCheck, LoopWarning)
"""In order: ``after_reply`` asks them in this order and the first that does not accept decides."""

__all__ = ["ACCEPT", "DEFAULT_GUARDS", "GuardAction", "Turn", "TurnGuard", "end", "nudge"]
