"""The POLICY step's seam: who may run which tool call (loop spec §3.8, DESIGN "tools").

A ``ToolPolicy`` looks at a validated call and answers allow, deny(reason) or
ask(reason). "ask" goes to an ``Approver`` (a human, a UI) when one is given; without one
the call is denied with a message saying approval was required. Policies and approvers
must not raise; if they do, the pipeline denies the call and says why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from codeloop.environments.base import ExecutionEnvironment


@dataclass(frozen=True)
class ToolCallRequest:
    """A call that passed LOOKUP and VALIDATE, as a policy sees it."""

    name: str
    """The tool's name."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Validated arguments."""
    call_id: str | None = None
    """The provider's id of the call, if any."""


@dataclass(frozen=True)
class PolicyDecision:
    """A policy's answer; build with :meth:`allow`, :meth:`deny` or :meth:`ask`."""

    action: Literal["allow", "deny", "ask"]
    """What to do with the call."""
    reason: str = ""
    """Why (shown to the model on deny, to the approver on ask)."""

    @classmethod
    def allow(cls) -> PolicyDecision:
        """Run the call."""
        return cls("allow")

    @classmethod
    def deny(cls, reason: str) -> PolicyDecision:
        """Refuse the call; the model sees ``reason``."""
        return cls("deny", reason)

    @classmethod
    def ask(cls, reason: str) -> PolicyDecision:
        """Ask the approver; deny when there is none."""
        return cls("ask", reason)


class ToolPolicy(Protocol):
    """Decides on each call. Must not raise."""

    def __call__(self, call: ToolCallRequest, env: ExecutionEnvironment) -> Awaitable[PolicyDecision]: ...


Approver = Callable[[ToolCallRequest, str], Awaitable[bool]]
"""``async (call, reason) -> approved``; called for "ask" decisions. Must not raise."""


async def allow_all(call: ToolCallRequest, env: ExecutionEnvironment) -> PolicyDecision:
    """The default policy: every call is allowed."""
    return PolicyDecision.allow()
