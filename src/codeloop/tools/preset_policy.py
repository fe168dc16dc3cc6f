"""The POLICY step for a :class:`codeloop.policy.Policy` (a preset plus overrides): the relay's
session policy and a space's policy JSON judge calls here, and only here (issue 30).

A face says what each of its calls is — a command line (:class:`CommandCall`) or a file
access (:class:`PathCall`) — with a ``describe`` function kept beside its tools; this module
turns that into the policy's verdict. Paths are always judged with the workspace root
(``env.working_directory()``), so a path is judged where its links lead: ``notes.txt ->
.env`` is ``.env``, and ``g/hooks/x`` under ``g -> .git`` is a git hook.
``tests/test_architecture.py`` fails when ``evaluate_command``, ``evaluate_path`` or
``judge_env`` are called anywhere else outside ``policy/``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from codeloop.policy import (
    Decision,
    Policy,
    evaluate_command,
    evaluate_path,
    is_read_only_line,
    judge_env,
    strictest,
)
from codeloop.policy.approval import ToolCallRequest, ToolPolicy

if TYPE_CHECKING:
    from codeloop.environments.base import ExecutionEnvironment


@dataclass(frozen=True)
class CommandCall:
    """A call that runs a shell line."""

    command: str
    """The line, as given."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables given to it (spaces' ``env``)."""
    cwd: str | None = None
    """Its working directory in the workspace, if not the root."""


@dataclass(frozen=True)
class PathCall:
    """A call that reads, writes or deletes one file."""

    path: str
    """The workspace path, as given."""
    access: Literal["read", "write", "delete"]
    """What the call does to it."""
    size: int | None = None
    """Bytes about to be written, when known before the call runs."""


Describe = Callable[[ToolCallRequest], "CommandCall | PathCall | None"]
"""What a face's call is to the policy; None for a call it always allows (a message)."""


def judge(what: CommandCall | PathCall | None, policy: Policy, root: str | None) -> Decision:
    """The policy's verdict on one call, with links followed inside ``root``."""
    if what is None:
        return Decision.allow()
    if isinstance(what, PathCall):
        return evaluate_path(what.path, what.access, policy.filesystem, what.size, root=root)
    verdict = strictest([evaluate_command(what.command, policy.shell, policy.network),
                         judge_env(what.env, policy.shell, policy.network, root)])
    if verdict.action == "allow" and policy.unsandboxed and not is_read_only_line(what.command):
        verdict = Decision.ask("commands run without the bubblewrap sandbox here, so a command that is "
                               "not read-only needs approval", "sandbox.unavailable")
    if what.cwd and verdict.action != "deny":
        cwd_verdict = evaluate_path(what.cwd, "read", policy.filesystem, root=root)
        if cwd_verdict.action == "deny":
            return cwd_verdict
    return verdict


def preset_policy(policy: Policy, describe: Describe) -> ToolPolicy:
    """The pipeline's POLICY step for ``policy``: each call as ``describe`` says, judged in the
    call's workspace. The decision comes back on the outcome (``ToolCallOutcome.data`` or
    ``.pending``) for the face's own wording."""

    async def check(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
        return judge(describe(call), policy, env.working_directory())

    return check
