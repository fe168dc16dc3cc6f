"""The registry, what an executor gets and returns, and the pipeline's outcome (loop spec §3.7, §3.8).

What a model sees of a tool is the LLM layer's :class:`~codeloop.llm.types.ToolDefinition`
(one family of tool types; ``tools/`` sits above ``llm/``). Values that cross the tool seam
are frozen dataclasses. An executor is a plain async
callable ``(arguments, env, ctx) -> str | ToolOutput``; it may raise, and the pipeline
(``codeloop.tools.pipeline``) turns every exception into an error ``ToolCallOutcome``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from codeloop.environments.base import ExecutionEnvironment, OutputCallback
from codeloop.llm.types import ImageData, ToolDefinition
from codeloop.policy.approval import ToolCallRequest
from codeloop.policy.pending import PendingCall
from codeloop.tools.effects import WIDEST, ToolEffects
from codeloop.tools.workspace_ops import PlannedChange


@dataclass(frozen=True)
class ToolOutput:
    """What an executor may return instead of a plain string."""

    text: str
    """The text for the model (before truncation)."""
    is_error: bool = False
    """True when the tool ran but its outcome is a failure the model should see as such
    (a command that exited non-zero, a timeout)."""
    images: tuple[ImageData, ...] = ()
    """Images for multimodal models."""
    data: Any = None
    """The typed outcome behind ``text`` (a ``CommandOutcome``, a ``Written``), for callers
    that format their own texts (the relay and spaces faces); never shown to a model.
    The pipeline sets it to the ``WorkspaceError``/``ToolError`` an executor raised."""


@dataclass(frozen=True)
class ToolContext:
    """Per-call information handed to an executor."""

    call_id: str | None = None
    """The provider's id of this tool call, if any."""
    session_id: str | None = None
    """The session the call belongs to, if any."""
    on_output: OutputCallback | None = None
    """Receives streamed command output (shell) as it arrives; must not raise."""
    before_change: Callable[[PlannedChange], None] | None = None
    """Called right before the tool changes the workspace or starts a process, by the
    tools that run ``workspace_ops`` with it (the relay's, for its crash journal)."""
    lenient: bool = False
    """The call comes from a small local model (issue 20): a value out of range is met rather
    than refused (read_file's offset past the end shows the file's last lines)."""
    step: int | str | None = None
    """The face's unit of work the call belongs to, for the checkpoint seam: the agent's turn
    (counted over the session's log), a relay reply, a spaces operation."""


@dataclass(frozen=True)
class ToolCallOutcome:
    """The outcome of one tool call after the whole pipeline (spec §3.8, §5.1).

    Not the LLM layer's ``ToolResult`` (the answer sent back to a model, §5.4): this one also
    keeps the full text, the typed data, images, timing and a held approval for the caller,
    which builds the model's answer from ``output`` and ``is_error``."""

    output: str
    """Text for the model, truncated per spec §5.1–5.3."""
    is_error: bool
    """True for unknown tools, invalid arguments, denied calls, raised errors and failed
    outcomes; the model reads ``output`` to recover."""
    full_output: str
    """The untruncated text (goes to the ``TOOL_CALL_END`` event, spec §2.9)."""
    tool_name: str
    """The name the model called (even when unknown)."""
    call_id: str | None = None
    """The provider's id of the call, copied from the context."""
    images: tuple[ImageData, ...] = ()
    """Images produced by the tool."""
    duration_ms: int = 0
    """Time spent in the pipeline."""
    pending: PendingCall | None = None
    """Set when the policy asked and nobody waited for the answer: the call did not run; its
    entry in the pending store (``.id``), which ``Pipeline.resume(id)`` runs once approved."""
    data: Any = None
    """The executor's typed outcome or typed error (``ToolOutput.data``); for a call the POLICY
    step stopped (denied, held, not approved), the policy's ``Decision`` (its rule and
    suggestion are the faces' to word); None when it did not run for another reason (unknown
    tool, invalid arguments) or failed unexpectedly."""

    @property
    def truncated(self) -> bool:
        """True when ``output`` is shorter than ``full_output``."""
        return self.output != self.full_output

    @property
    def full_output_chars(self) -> int:
        """Length of the untruncated output, in characters."""
        return len(self.full_output)


Executor = Callable[[dict[str, Any], ExecutionEnvironment, ToolContext], Awaitable[str | ToolOutput]]
"""``async (arguments, env, ctx) -> str | ToolOutput``; may raise (the pipeline catches everything)."""


@dataclass(frozen=True)
class RegisteredTool:
    """A definition plus the code that runs it (spec §3.8)."""

    definition: ToolDefinition
    """What the model sees."""
    executor: Executor
    """``async (arguments, env, ctx) -> str | ToolOutput``."""
    effects: ToolEffects = WIDEST
    """What its calls may do and which paths a call names (:mod:`codeloop.tools.effects`);
    a tool that does not say is the widest."""

    @property
    def name(self) -> str:
        """Shortcut for ``definition.name``."""
        return self.definition.name


@dataclass
class ToolRegistry:
    """Tools by name; registering a name again replaces it (latest wins, spec §3.7)."""

    _tools: dict[str, RegisteredTool] = field(default_factory=dict)

    @classmethod
    def of(cls, tools: list[RegisteredTool]) -> ToolRegistry:
        """A registry holding ``tools`` (later entries win on name collisions)."""
        registry = cls()
        for tool in tools:
            registry.register(tool)
        return registry

    def register(self, tool: RegisteredTool) -> None:
        """Add or replace a tool."""
        self._tools.pop(tool.name, None)
        self._tools[tool.name] = tool

    def unregister(self, name: str) -> None:
        """Remove a tool; no error when it is absent."""
        self._tools.pop(name, None)

    def get(self, name: str) -> RegisteredTool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def effects(self, name: str) -> ToolEffects:
        """The declaration of the tool called ``name``; the widest when there is none."""
        tool = self._tools.get(name)
        return WIDEST if tool is None else tool.effects

    def request(self, name: str, arguments: dict[str, Any], call_id: str | None = None) -> ToolCallRequest:
        """A call of ``name`` with its tool's declaration applied (what the pipeline builds),
        for code that sees a model's call outside the pipeline (the turn guards)."""
        return self.effects(name).request(name, arguments, call_id)

    def definitions(self) -> list[ToolDefinition]:
        """Definitions in registration order."""
        return [tool.definition for tool in self._tools.values()]

    def names(self) -> list[str]:
        """Names in registration order."""
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A tool's parameter schema: an object with these properties and no others."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def make_tool(
    name: str, description: str, properties: dict[str, Any], required: list[str], executor: Executor,
    effects: ToolEffects = WIDEST,
) -> RegisteredTool:
    """A tool whose parameters are :func:`object_schema` of ``properties`` and ``required``."""
    return RegisteredTool(ToolDefinition(name, description, object_schema(properties, required)), executor, effects)
