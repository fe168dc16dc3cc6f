"""The POLICY step's default: every call is allowed.

The seam's types live in :mod:`codeloop.policy.approval` and are re-exported here for the
agent (``Approver``) and older imports.
"""

from __future__ import annotations

from codeloop.environments.base import ExecutionEnvironment
from codeloop.policy.approval import Approver as Approver
from codeloop.policy.approval import ToolCallRequest as ToolCallRequest
from codeloop.policy.approval import ToolPolicy as ToolPolicy
from codeloop.policy.model import Decision


async def allow_all(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
    """The default policy: every call is allowed."""
    return Decision.allow()
