"""Subagents (loop spec §7): child sessions driven through four tools.

A child shares the parent's environment and profile, has its own history and turn limit
(default 50), and runs as an asyncio task, so several children work at the same time.
The session only offers these tools while ``depth < max_subagent_depth`` (default 1:
children cannot spawn). Results reach the parent as tool results.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from codeloop.agent.budget import BudgetPriceError
from codeloop.environments.base import ExecutionEnvironment
from codeloop.llm.types import ToolDefinition
from codeloop.tools.effects import NO_EFFECTS
from codeloop.tools.errors import ToolError
from codeloop.tools.registry import RegisteredTool, ToolContext, ToolOutput

if TYPE_CHECKING:
    from codeloop.agent.config import SessionConfig
    from codeloop.agent.history import History
    from codeloop.llm.types import ImageData
    from codeloop.profiles.base import ProviderProfile


class AgentSession(Protocol):
    """What the manager needs of a session, parent or child (the Session; a Protocol so that
    this module never imports it: the ``agent-acyclic`` import contract)."""

    @property
    def profile(self) -> ProviderProfile: ...

    @property
    def config(self) -> SessionConfig: ...

    @property
    def history(self) -> History: ...

    @property
    def end_reason(self) -> str: ...

    @property
    def last_text(self) -> str: ...

    @property
    def state(self) -> str:
        """``idle``, ``processing``, ``awaiting_input`` or ``closed`` (a StrEnum in the Session)."""

    def steer(self, message: str) -> None: ...

    def child(self, profile: ProviderProfile, config: SessionConfig, working_dir: str | None) -> AgentSession:
        """A new session one level deeper, sharing this one's workspace, client, policy and budget."""

    async def submit(self, user_input: str, images: Sequence[ImageData] = ()) -> str: ...

    async def abort(self) -> None: ...


@dataclass(frozen=True)
class SubAgentResult:
    """What ``wait`` returns (§7.3)."""

    output: str
    """Final text of the child."""
    success: bool
    """True when the child finished its input normally."""
    turns_used: int
    """User and assistant turns in the child's history."""


@dataclass
class SubAgentHandle:
    """A running or finished child (§7.3)."""

    id: str
    """Agent id given to the model."""
    session: AgentSession
    """The child session (own history)."""
    instruction: str = ""
    """The task it was spawned with."""
    task: asyncio.Task[str] | None = None
    """The current ``submit`` of the child."""

    @property
    def status(self) -> str:
        """``running``, ``completed`` or ``failed``."""
        if self.task is not None and not self.task.done():
            return "running"
        return "completed" if self.session.end_reason in ("completed", "") else "failed"


class SubagentManager:
    """The children of one session."""

    def __init__(self, parent: AgentSession) -> None:
        self.parent = parent
        self.agents: dict[str, SubAgentHandle] = {}

    def spawn(self, task: str, working_dir: str | None, model: str | None, max_turns: int | None) -> SubAgentHandle:
        """Start a child on ``task``; it runs concurrently with the parent."""
        parent = self.parent
        profile = parent.profile if not model else dataclasses.replace(parent.profile, model=model)
        config = dataclasses.replace(
            parent.config, max_turns=max_turns or parent.config.subagent_max_turns)
        try:  # the parent's budget (issue 36): what a child spends, the parent has spent
            child = parent.child(profile, config, working_dir)
        except BudgetPriceError as exc:
            raise ToolError(f"cannot spawn with model {profile.model!r} under a cost limit: {exc}") from None
        handle = SubAgentHandle("agent_" + uuid.uuid4().hex[:8], child, task)
        handle.task = asyncio.create_task(child.submit(task))
        self.agents[handle.id] = handle
        return handle

    def get(self, agent_id: str) -> SubAgentHandle:
        """The child ``agent_id``; raises ToolError naming the known ids."""
        handle = self.agents.get(agent_id)
        if handle is None:
            known = ", ".join(self.agents) or "none"
            raise ToolError(f"No subagent with id {agent_id!r}. Known subagents: {known}.")
        return handle

    async def wait(self, agent_id: str) -> SubAgentResult:
        """Wait for the child's current input to finish."""
        handle = self.get(agent_id)
        if handle.task is not None:
            await asyncio.gather(handle.task, return_exceptions=True)
        session = handle.session
        return SubAgentResult(session.last_text, handle.status == "completed", session.history.turn_count)

    async def close_all(self) -> None:
        """Abort every child (Appendix B step 7)."""
        for handle in list(self.agents.values()):
            await handle.session.abort()


def _result_text(agent_id: str, result: SubAgentResult) -> str:
    return (f"Subagent {agent_id} {'completed' if result.success else 'failed'} "
            f"(turns used: {result.turns_used}).\nOutput:\n{result.output}")


def subagent_tools(manager: SubagentManager) -> list[RegisteredTool]:
    """``spawn_agent``, ``send_input``, ``wait``, ``close_agent`` bound to ``manager`` (§7.2)."""

    async def spawn_agent(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
        handle = manager.spawn(args["task"], args.get("working_dir"), args.get("model"), args.get("max_turns"))
        return f"Spawned subagent {handle.id} (status: running). Call wait with agent_id={handle.id!r} for its result."

    async def send_input(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
        handle = manager.get(args["agent_id"])
        if handle.status == "running":
            handle.session.steer(args["message"])
            return f"Message delivered to subagent {handle.id} (it sees it after its current step)."
        if handle.session.state == "closed":
            raise ToolError(f"Subagent {handle.id} is closed; spawn a new one.")
        handle.task = asyncio.create_task(handle.session.submit(args["message"]))
        return f"Subagent {handle.id} resumed with the new message (status: running)."

    async def wait(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        result = await manager.wait(args["agent_id"])
        return ToolOutput(_result_text(args["agent_id"], result), is_error=not result.success)

    async def close_agent(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
        handle = manager.get(args["agent_id"])
        was = handle.status
        await handle.session.abort()
        return f"Subagent {handle.id} closed (status before closing: {was})."

    agent_id = {"agent_id": {"type": "string", "description": "Id returned by spawn_agent."}}
    # They touch nothing themselves: a child's calls run through the pipeline with the parent's
    # policy and checkpoints, each judged by its own tool's declaration.
    return [
        RegisteredTool(ToolDefinition("spawn_agent", "Spawn a subagent to handle a scoped task autonomously. "
                                      "It shares the workspace and runs while you continue; get its result with wait.", {
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "What the subagent must do, self-contained."},
                "working_dir": {"type": "string", "description": "Subdirectory to scope the agent to."},
                "model": {"type": "string", "description": "Model override (default: yours)."},
                "max_turns": {"type": "integer", "minimum": 1, "description": "Turn limit (default 50)."},
            },
            "required": ["task"],
        }), spawn_agent, NO_EFFECTS),
        RegisteredTool(ToolDefinition("send_input", "Send a message to a subagent.", {
            "type": "object",
            "properties": {**agent_id, "message": {"type": "string"}},
            "required": ["agent_id", "message"],
        }), send_input, NO_EFFECTS),
        RegisteredTool(ToolDefinition("wait", "Wait for a subagent to complete and return its output.", {
            "type": "object", "properties": agent_id, "required": ["agent_id"],
        }), wait, NO_EFFECTS),
        RegisteredTool(ToolDefinition("close_agent", "Terminate a subagent.", {
            "type": "object", "properties": agent_id, "required": ["agent_id"],
        }), close_agent, NO_EFFECTS),
    ]
