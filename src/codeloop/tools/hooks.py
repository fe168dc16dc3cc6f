"""Hooks (issue 21, docs/hooks.md): the user's commands run on session events.

A :class:`Hook` comes from a ``[[hooks]]`` table of a config file (``codeloop.config``). The
events: ``session_start``, ``user_prompt``, ``pre_tool_call``, ``post_tool_call``, ``stop``.
Each hook runs through the one process runner (``environments/runner.py``: its own process
group, killed whole at the timeout) with ``sh -c COMMAND`` in the workspace, the event as JSON
on stdin, and the host environment filtered like the shell tool's (no secrets).

What a hook answers (exit status, stdout):

- exit 0: fine; for ``pre_tool_call`` stdout may be JSON ``{"decision": "allow"|"deny"|"ask",
  "message": "..."}``; for the others it is text: appended to the result (``post_tool_call``),
  added to the prompt (``user_prompt``), ignored (``session_start``, ``stop``);
- exit 2: ``pre_tool_call`` denies, its stderr is the message the model reads;
- anything else (another status, a timeout, no start): a failed hook. It never stops the
  session: the caller gets a warning, and a failing ``pre_tool_call`` hook sends the call to
  the approval prompt (:data:`FAILED_PRE_HOOK`; with nobody to answer the call is refused).

``pre_tool_call`` is a :class:`~codeloop.policy.approval.ToolPolicy` around the caller's
(:meth:`Hooks.policy`): a deny ends there, an ask becomes a pending call of the pipeline's store, an allow
leaves the decision to the wrapped policy (a hook cannot approve what the user's approval mode
would ask about). ``post_tool_call`` is the pipeline's AFTER step (:meth:`Hooks.after_call`).
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeloop.environments.base import ExecLimits
from codeloop.environments.envfilter import Redactor, filter_environment
from codeloop.environments.runner import run_process
from codeloop.policy.approval import ToolCallRequest, ToolPolicy, allow_all
from codeloop.policy.model import Decision
from codeloop.tools.effects import call_paths
from codeloop.tools.registry import ToolOutput

if TYPE_CHECKING:
    from codeloop.environments.base import ExecutionEnvironment

HOOK_EVENTS = ("session_start", "user_prompt", "pre_tool_call", "post_tool_call", "stop")
"""The events a hook may run on."""
TOOL_EVENTS = ("pre_tool_call", "post_tool_call")
"""The events whose hooks have matchers (``tools``, ``paths``)."""
DEFAULT_HOOK_TIMEOUT = 30.0
"""Seconds a hook may run before its process group is killed."""
DENY_EXIT_CODE = 2
"""A ``pre_tool_call`` hook exiting with this status denies the call (stderr: the message)."""
FAILED_PRE_HOOK = "ask"
"""What a failing ``pre_tool_call`` hook means: the user decides (never a silent allow)."""

Warn = Callable[[str], None]


@dataclass(frozen=True)
class Hook:
    """One ``[[hooks]]`` entry."""

    event: str
    """One of :data:`HOOK_EVENTS`."""
    command: str
    """A shell line (``sh -c``), run in the workspace."""
    timeout: float = DEFAULT_HOOK_TIMEOUT
    tools: tuple[str, ...] = ()
    """Tool-name patterns (``fnmatch``: ``shell``, ``mcp_*``); empty: every tool."""
    paths: tuple[str, ...] = ()
    """Path globs (``*.py``, ``src/*``; ``*`` crosses ``/``) a call's path must match; empty: any call.
    A call's paths are those its tool declares (``codeloop.tools.effects``): a ``shell`` or MCP
    call names none, so it never matches a hook with ``paths`` (use ``tools`` for those)."""
    source: str = ""
    """Where it was configured (``file:line``), for warnings."""

    def matches(self, call: ToolCallRequest, workspace: Path) -> bool:
        """Whether this hook runs for ``call`` (tool events only)."""
        if self.tools and not any(fnmatch.fnmatchcase(call.name, p) for p in self.tools):
            return False
        if not self.paths:
            return True
        return any(fnmatch.fnmatchcase(path, p) for path in call_paths(call, workspace) for p in self.paths)


@dataclass(frozen=True)
class _Answer:
    """What one hook run said; ``failure`` is the warning text when it failed."""

    decision: str | None = None
    message: str = ""
    text: str = ""
    failure: str | None = None


class Hooks:
    """The hooks of one workspace; the Session calls them (``codeloop.agent.session``)."""

    def __init__(self, hooks: Iterable[Hook], workspace: Path | str) -> None:
        self.hooks = tuple(hooks)
        self.workspace = Path(workspace)
        self.limits = ExecLimits(kill_grace_ms=1_000)

    def __bool__(self) -> bool:
        return bool(self.hooks)

    def for_event(self, event: str, call: ToolCallRequest | None = None) -> list[Hook]:
        return [h for h in self.hooks if h.event == event and (call is None or h.matches(call, self.workspace))]

    async def run(self, hook: Hook, payload: dict[str, Any]) -> _Answer:
        """Run one hook with ``payload`` on stdin; never raises."""
        env = filter_environment(os.environ)
        env.update(CODELOOP_HOOK_EVENT=hook.event, CODELOOP_WORKSPACE=str(self.workspace))
        data = json.dumps({"event": hook.event, "workspace": str(self.workspace), **payload}, default=str)
        result = await run_process(["/bin/sh", "-c", hook.command], cwd=self.workspace, env=env,
                                   timeout_ms=int(hook.timeout * 1000), limits=self.limits,
                                   keep_full_output=False, stdin_data=data.encode())
        redact = Redactor.for_environment(os.environ)
        out, err = redact(result.stdout).strip(), redact(result.stderr).strip()
        name = f"{hook.event} hook `{hook.command}`" + (f" ({hook.source})" if hook.source else "")
        if not result.started:
            return _Answer(failure=f"{name} could not start: {err}")
        if result.timed_out:
            return _Answer(failure=f"{name} ran past its timeout of {hook.timeout:g} s and was killed "
                                   "with its child processes")
        if result.exit_code == DENY_EXIT_CODE and hook.event == "pre_tool_call":
            return _Answer("deny", err or out or f"denied by the hook `{hook.command}`")
        if result.exit_code != 0:
            return _Answer(failure=f"{name} failed (exit status {result.exit_code})" + (f": {err[:500]}" if err else ""))
        if hook.event == "pre_tool_call" and out.startswith("{"):
            try:
                answer = json.loads(out)
            except json.JSONDecodeError:
                answer = None
            if isinstance(answer, dict):
                decision = answer.get("decision")
                if decision not in (None, "allow", "deny", "ask"):
                    return _Answer(failure=f"{name} answered decision {decision!r}; use allow, deny or ask")
                message = answer.get("message")
                return _Answer(decision, str(message) if message is not None else "")
        return _Answer(text=out)

    async def notify(self, event: str, payload: dict[str, Any], warn: Warn) -> list[str]:
        """Run the hooks of ``event`` in order; their texts (failures go to ``warn``)."""
        texts = []
        for hook in self.for_event(event):
            answer = await self.run(hook, payload)
            if answer.failure is not None:
                warn(answer.failure)
            elif answer.text:
                texts.append(answer.text)
        return texts

    def policy(self, inner: ToolPolicy | None, session_id: str, warn: Warn) -> ToolPolicy:
        """``pre_tool_call`` as a ToolPolicy around ``inner`` (None: allow)."""
        wrapped = inner or allow_all

        async def policy(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
            asked: str | None = None
            for hook in self.for_event("pre_tool_call", call):
                answer = await self.run(hook, _tool_payload(call, session_id))
                if answer.failure is not None:
                    warn(answer.failure)
                    asked = asked or f"the hook `{hook.command}` failed, so you decide"
                elif answer.decision == "deny":
                    return Decision.deny(answer.message or f"the hook `{hook.command}` refused it", rule="hook")
                elif answer.decision == "ask":
                    asked = asked or answer.message or f"the hook `{hook.command}` asks"
            if asked is not None:
                return Decision.ask(asked, rule="hook")
            return await wrapped(call, env)

        return policy

    async def after_call(self, call: ToolCallRequest, output: ToolOutput, session_id: str,
                         warn: Warn) -> ToolOutput:
        """``post_tool_call``: each matching hook's text appended to the result."""
        hooks = self.for_event("post_tool_call", call)
        if not hooks:
            return output
        text = output.text
        payload = {**_tool_payload(call, session_id), "result": {"output": output.text, "is_error": output.is_error}}
        for hook in hooks:
            answer = await self.run(hook, payload)
            if answer.failure is not None:
                warn(answer.failure)
            elif answer.text:
                text += f"\n\n[post_tool_call hook `{hook.command}`]\n{answer.text}"
        if text == output.text:
            return output
        return ToolOutput(text, is_error=output.is_error, images=output.images, data=output.data)


def _tool_payload(call: ToolCallRequest, session_id: str) -> dict[str, Any]:
    return {"session_id": session_id, "tool_name": call.name, "arguments": call.arguments, "call_id": call.call_id}
