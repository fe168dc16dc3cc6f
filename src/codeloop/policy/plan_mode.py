"""Plan mode as a policy preset (issue 21): the agent may only read.

:func:`plan_mode_policy` wraps the POLICY step of the tool pipeline
(``codeloop.tools.pipeline.execute_tool_call``), so the promise holds whatever the model
does with its prompt:

- calls whose tool declares only reads (``codeloop.tools.effects``: read_file, grep, ...) or
  nothing at all (the subagent tools: children share the parent's policy and environment, so
  they are held to the same rules) go to the wrapped policy as usual;
- a call that runs a shell line in the workspace's environment (``shell``: the request's
  ``command``) runs only when the caller put it in a read-only sandbox (bubblewrap binds the
  workspace read-only, ``codeloop.environments.factory.open_environment(sandbox="read-only")``);
  without one, shell is refused altogether: a read-only promise needs the sandbox, a
  command's words cannot be trusted to say whether it writes;
- every other call (write, edit, patch, delete, MCP tools, which may write anywhere) is
  refused with a result that says plan mode is on and how to leave it. The refusal is an
  ordinary tool result, so a small model in text tool mode reads it like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeloop.policy.approval import ToolCallRequest, ToolPolicy, allow_all
from codeloop.policy.model import Decision

if TYPE_CHECKING:
    from codeloop.environments.base import ExecutionEnvironment

LEAVE_PLAN_MODE = ("finish with your plan as the final answer; the user runs it with /go in a chat "
                   "(or with codeloop run without --plan)")
"""How plan mode ends, in every refusal."""


def plan_mode_refusal(call: ToolCallRequest, *, shell_sandboxed: bool = True) -> str:
    """The reason a call is refused in plan mode (what the model reads)."""
    tool = call.name
    if call.command is not None and not shell_sandboxed:
        return ("plan mode is on and bubblewrap cannot run here, so shell is refused altogether (plan mode "
                "promises read-only, which needs the read-only sandbox); read with read_file, grep and glob "
                f"instead, and {LEAVE_PLAN_MODE}")
    return f"plan mode is on: the agent may only read, so {tool} was not run; {LEAVE_PLAN_MODE}"


def plan_mode_policy(inner: ToolPolicy | None, *, shell_sandboxed: bool) -> ToolPolicy:
    """The plan-mode POLICY around ``inner`` (None: allow). ``shell_sandboxed`` must be True
    only when commands run in a read-only sandbox of the workspace."""
    wrapped = inner or allow_all

    async def policy(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
        if call.read_only:
            return await wrapped(call, env)
        if call.command is not None and shell_sandboxed:
            return Decision.allow()  # the read-only sandbox keeps every write from the disk
        return Decision.deny(plan_mode_refusal(call, shell_sandboxed=shell_sandboxed), rule="plan-mode")

    return policy
