"""The POLICY step's seam: tool calls as a policy judges them.

A :class:`ToolPolicy` looks at a validated call and answers a :class:`Decision`: allow,
deny(reason) or ask(reason). Policies must not raise; if they do, the pipeline
(``codeloop.tools.pipeline``) denies the call and says why. A policy decides and never
prompts: an ``ask`` becomes a pending call of the one store (:mod:`codeloop.policy.pending`,
issue 34), answered there exactly once by whoever answers.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from codeloop.policy.model import Decision

if TYPE_CHECKING:
    from codeloop.environments.base import ExecutionEnvironment


class Effect(StrEnum):
    """What a tool call may do (``codeloop.tools.effects``: each tool declares a set of these).

    Defined here, beside :class:`ToolCallRequest` which carries them, because ``policy/`` lies
    below ``tools/``: policies read a call's effects, never a list of tool names."""

    READ = "read"
    """Reads workspace files."""
    WRITE = "write"
    """Changes workspace files, only the ones the call's ``paths`` name."""
    EXEC = "exec"
    """Runs a program, whose changes nobody can name before it runs."""
    NETWORK = "network"
    """Talks to other hosts."""


ALL_EFFECTS: frozenset[Effect] = frozenset(Effect)
"""The widest declaration: what a tool that cannot say (MCP tools, ``shell``, unknown) may do."""
READ_ONLY: frozenset[Effect] = frozenset({Effect.READ})


@dataclass(frozen=True)
class ToolCallRequest:
    """A call that passed LOOKUP and VALIDATE, as a policy sees it.

    ``effects``, ``paths`` and ``command`` are the called tool's declaration applied to these
    arguments (``codeloop.tools.effects.ToolEffects.request``); built by hand without them, a
    request is the widest (every effect, paths unknown)."""

    name: str
    """The tool's name."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Validated arguments."""
    call_id: str | None = None
    """The provider's id of the call, if any."""
    effects: frozenset[Effect] = ALL_EFFECTS
    """What the call may do."""
    paths: tuple[str, ...] | None = None
    """The workspace paths the call names, as given; None when its tool cannot say (``shell``,
    MCP tools): then it may touch any file."""
    command: str | None = None
    """The shell line the call runs in the workspace's environment (``shell``); None when it
    runs none there or its tool cannot say (an MCP tool runs elsewhere)."""

    @property
    def read_only(self) -> bool:
        """True when the call may only read (its declared effects are ``read`` or none)."""
        return self.effects <= READ_ONLY

    @property
    def changes(self) -> bool:
        """True when the call may change the workspace (``write`` or ``exec``)."""
        return bool(self.effects & {Effect.WRITE, Effect.EXEC})

    @property
    def line_only_reads(self) -> bool:
        """True when the call runs a shell line every command of which only reads (the approval
        modes' judgement, ``policy/shell.py``'s read-only list); False when it runs no line or
        the line cannot be analysed. For what must know whether an undeclared call changes files."""
        if self.command is None:
            return False
        from codeloop.policy.approval_modes import is_read_only_line  # that module imports this one

        return is_read_only_line(self.command)


class ToolPolicy(Protocol):
    """Decides on each call. Must not raise."""

    def __call__(self, call: ToolCallRequest, env: ExecutionEnvironment) -> Awaitable[Decision]: ...


async def allow_all(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
    """The default policy: every call is allowed."""
    return Decision.allow()
