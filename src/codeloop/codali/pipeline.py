"""The codali roles pipeline: librarian → architect → builder → critic, until PASS (issue 8).

- The **librarian** gathers context with ``AGENT_REQUEST v1`` and writes a brief.
- The **architect** writes a plan ending in ``plan_targets`` (the files the builder may touch).
- The **builder** carries the plan out with real tools through ``execute_tool_call``
  (validation, policy, truncation as everywhere else).
- The **critic** runs the deterministic checks (files touched outside ``plan_targets``,
  the check command) and asks its model; the ``critic.result`` goes back to the
  architect as a ``CODALI_RESPONSE v1``, and the loop repeats until PASS or ``max_rounds``.

Every role call sends the full shared history (spec §4); near 90 % of the called model's
context window it is summarized by the summarizer model. Each role has its own model.
A model's malformed request becomes a message it can correct, never an exception.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codeloop.agent.history import AssistantTurn, native_messages
from codeloop.agent.text_tool_calls import parse_text_tool_calls
from codeloop.codali.answer import answer_request
from codeloop.codali.critic import CriticResult, judge
from codeloop.codali.history import CHARS_PER_TOKEN, History, transcript
from codeloop.codali.prompts import ARCHITECT, BUILDER, CRITIC, LIBRARIAN, SUMMARIZER
from codeloop.codali.request import AgentRequestError, parse_agent_request
from codeloop.codali.yamlish import YamlishError, parse_block, plain
from codeloop.environments.base import ExecutionEnvironment
from codeloop.index import CodeIndex, normalize_path
from codeloop.index.ignore import walk_repository
from codeloop.llm.client import Client
from codeloop.llm.errors import ContextLengthError
from codeloop.llm.types import Message, Request, Response
from codeloop.llm.types import ToolDefinition as LLMToolDefinition
from codeloop.tools.pipeline import execute_tool_call
from codeloop.tools.registry import ToolContext, ToolRegistry

PipelineEvent = Callable[[str, dict[str, Any]], None]
"""``(kind, data)`` progress callback: role_start, agent_request, tool_call, critic_result,
history_compacted, round_end. Must not raise."""


@dataclass(frozen=True)
class ModelChoice:
    """The model one role uses."""

    model: str
    """Provider model id."""
    provider: str | None = None
    """Adapter name in the client; the client's default when None."""
    context_window: int = 32_768
    """Tokens; history is summarized at 90 % of it."""


@dataclass(frozen=True)
class PipelineConfig:
    """Models and limits of a run."""

    librarian: ModelChoice
    architect: ModelChoice
    builder: ModelChoice
    critic: ModelChoice
    summarizer: ModelChoice
    """The cheaper model that compacts history."""
    max_rounds: int = 3
    """Architect → builder → critic loops before giving up with FAIL."""
    max_context_requests: int = 4
    """AGENT_REQUESTs answered per role turn."""
    max_builder_steps: int = 25
    """Model calls of the builder per round."""
    check_command: str | None = None
    """A command the critic runs after each build (tests); non-zero exit → FAIL."""
    check_timeout_ms: int = 300_000
    keep_recent_messages: int = 6
    """Messages kept verbatim when history is summarized."""
    content_budget: int | None = 60_000
    """Characters of file content per CODALI_RESPONSE."""
    max_output_tokens: int | None = 2048
    """Longest reply per model call: a small model that rambles to its context limit at a
    few tokens per second on a CPU would otherwise stall the run for many minutes."""

    @classmethod
    def single(cls, model: str, provider: str | None = None, *, summarizer: str | None = None,
               context_window: int = 32_768, **limits: Any) -> PipelineConfig:
        """Every role on ``model`` (the summarizer on ``summarizer`` when given)."""
        choice = ModelChoice(model, provider, context_window)
        return cls(choice, choice, choice, choice, replace(choice, model=summarizer or model), **limits)


@dataclass(frozen=True)
class PipelineResult:
    """The outcome of :meth:`RolesPipeline.run`."""

    status: str
    """``PASS`` or ``FAIL``."""
    rounds: int
    """Architect → builder → critic loops run."""
    plan: str
    """The architect's last plan."""
    plan_targets: tuple[str, ...]
    touched_files: tuple[str, ...]
    """Files changed by the builder over the whole run."""
    critic: CriticResult | None
    """The last critic result."""
    compactions: int
    """Times the history was summarized."""
    messages: tuple[Message, ...] = field(default=())
    """The final shared history."""


def parse_plan_targets(text: str) -> list[str] | None:
    """The ``plan_targets`` list at the end of a plan (YAML-like or JSON), ``None`` if absent."""
    start = text.rfind("plan_targets")
    if start == -1:
        return None
    tail = text[start:].replace('"plan_targets"', "plan_targets").strip("`")
    if tail.startswith("plan_targets") and ":" in tail:
        after = tail.split(":", 1)[1].strip()
        if after.startswith("["):
            tail = "plan_targets: " + after.split("]", 1)[0] + "]"
        else:
            lines = ["plan_targets:"]
            for line in tail.split("\n")[1:]:
                if line.strip().startswith("-"):
                    lines.append("  - " + line.strip()[1:].strip())
                elif line.strip():
                    break
            tail = "\n".join(lines)
    try:
        data = plain(parse_block(tail))
    except YamlishError:
        return None
    targets = data.get("plan_targets") if isinstance(data, dict) else None
    if not isinstance(targets, list):
        return None
    return [normalize_path(str(t)) + ("/" if str(t).endswith("/") else "") for t in targets if t]


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {rel: (st.st_size, st.st_mtime_ns) for rel, st in walk_repository(str(root))}


class RolesPipeline:
    """One run of the roles over one repository."""

    def __init__(self, client: Client, repo_root: str | Path, config: PipelineConfig, *,
                 env: ExecutionEnvironment | None = None, registry: ToolRegistry | None = None,
                 on_event: PipelineEvent | None = None) -> None:
        self.client = client
        self.root = Path(os.path.realpath(repo_root))
        self.config = config
        if env is None:
            from codeloop.environments.local import LocalExecutionEnvironment

            env = LocalExecutionEnvironment(self.root)
        self.env = env
        if registry is None:
            from codeloop.tools.index_tools import index_tools
            from codeloop.tools.sets import core_tools

            registry = ToolRegistry.of([*core_tools(), *index_tools(self.root)])
        self.registry = registry
        self.index = CodeIndex(self.root)
        self.history = History(min(c.context_window for c in (config.librarian, config.architect, config.builder,
                                                               config.critic)),
                               keep_recent=config.keep_recent_messages)
        self._emit = on_event or (lambda kind, data: None)

    # Model calls ------------------------------------------------------------------------

    async def _summarize(self, text: str) -> str:
        choice = self.config.summarizer
        # The transcript must fit the summarizer's own window: keep its most recent part.
        window = choice.context_window
        room = (window - min(self.config.max_output_tokens or 0, window // 2)) * CHARS_PER_TOKEN * 3 // 4
        if len(text) > room:
            text = f"[earlier part of the conversation left out]\n{text[-room:]}"
        response = await self.client.complete(Request(
            model=choice.model, provider=choice.provider,
            messages=[Message.system(SUMMARIZER), Message.user(text)], max_tokens=self.config.max_output_tokens))
        return response.text.strip() or text[-4000:]

    async def _complete(self, choice: ModelChoice, system: str,
                        tools: list[LLMToolDefinition] | None = None) -> Response:
        # The prompt and the reply share the window.
        budget = choice.context_window - min(self.config.max_output_tokens or 0, choice.context_window // 2)
        if await self.history.fit(self._summarize, len(system), budget):
            self._emit("history_compacted", {"messages": len(self.history.messages)})

        def request() -> Request:
            return Request(model=choice.model, provider=choice.provider, tools=tools,
                           max_tokens=self.config.max_output_tokens,
                           messages=[Message.system(system), *self.history.messages])

        try:
            return await self.client.complete(request())
        except ContextLengthError:
            # The estimate was short of the real count: compact now and ask once more.
            if not await self.history.fit(self._summarize, len(system), budget, force=True):
                raise
            self._emit("history_compacted", {"messages": len(self.history.messages)})
            return await self.client.complete(request())

    async def _role_turn(self, role: str, choice: ModelChoice, system: str, instruction: str) -> str:
        """Ask ``role`` until it answers without an AGENT_REQUEST; answer each request."""
        self._emit("role_start", {"role": role})
        self.history.add(Message.user(f"[{role}] {instruction}"))
        text = ""
        for attempt in range(self.config.max_context_requests + 1):
            text = (await self._complete(choice, system)).text
            self.history.add(Message.assistant(text))
            if "AGENT_REQUEST" not in text:
                return text
            if attempt == self.config.max_context_requests:
                self.history.add(Message.user("No more context requests in this turn; give your final answer now."))
                text = (await self._complete(choice, system)).text
                self.history.add(Message.assistant(text))
                return text
            try:
                request = parse_agent_request(text)
            except AgentRequestError as exc:
                self.history.add(Message.user(f"Codali could not parse your AGENT_REQUEST: {exc}. "
                                              "Send a corrected request, or give your final answer."))
                continue
            self._emit("agent_request", {"role": role, "needs": [n.type for n in request.needs]})
            response = await answer_request(request, self.root, env=self.env, index=self.index,
                                            content_budget=self.config.content_budget)
            self.history.add(Message.user(response.to_text()))
        return text

    # Roles ------------------------------------------------------------------------------

    async def _architect(self, round_number: int) -> tuple[str, list[str]]:
        instruction = ("Write the plan for the task." if round_number == 1 else
                       "The critic failed the last build (see the critic.result above). Revise the plan.")
        plan = await self._role_turn("architect", self.config.architect, ARCHITECT, instruction)
        targets = parse_plan_targets(plan)
        if targets is None:
            plan = await self._role_turn("architect", self.config.architect, ARCHITECT,
                                         "Your plan has no plan_targets list. Repeat the plan ending with "
                                         "'plan_targets:' and one '- \"path\"' line per file.")
            targets = parse_plan_targets(plan) or []
        return plan, targets

    async def _builder(self, targets: list[str]) -> list[str]:
        self._emit("role_start", {"role": "builder"})
        before = _snapshot(self.root)
        self.history.add(Message.user(f"[builder] Carry out the latest plan. plan_targets: {', '.join(targets)}"))
        tools = [LLMToolDefinition(d.name, d.description, dict(d.parameters)) for d in self.registry.definitions()]
        for _ in range(self.config.max_builder_steps):
            response = await self._complete(self.config.builder, BUILDER, tools)
            calls = response.tool_calls
            if calls or not response.text:
                self.history.add(response.message)
            else:
                # Small local models write their calls as text (fenced JSON, <tool_call> tags)
                # instead of structured tool_calls; run those, and keep them in the history as
                # structured calls so each tool result answers a call the server knows.
                schemas = {d.name: d.parameters for d in self.registry.definitions()}
                calls = list(parse_text_tool_calls(response.text, schemas).calls)
                self.history.add(native_messages(AssistantTurn(content=response.text, tool_calls=tuple(calls)))[0]
                                 if calls else response.message)
            if not calls:
                break
            recovered = not response.tool_calls
            for call in calls:
                if recovered and call.parse_error is not None:
                    # The recovery parser's message shows the exact valid form of the call.
                    output, is_error = call.parse_error, True
                else:
                    arguments: dict[str, Any] | str = call.arguments if call.parse_error is None else (
                        call.raw_arguments or "")
                    result = await execute_tool_call(self.registry, call.name, arguments, self.env,
                                                     ctx=ToolContext(call_id=call.id))
                    output, is_error = result.output, result.is_error
                self._emit("tool_call", {"name": call.name, "is_error": is_error})
                self.history.add(Message.tool_result(call.id, output, is_error, name=call.name))
        after = _snapshot(self.root)
        return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))

    async def _critic(self, touched: list[str], targets: list[str]) -> CriticResult:
        check_failure = None
        check_note = "no check command configured"
        if self.config.check_command:
            run = await self.env.exec_command(self.config.check_command, timeout_ms=self.config.check_timeout_ms)
            if run.exit_code != 0 or run.timed_out:
                why = "timed out" if run.timed_out else f"exit {run.exit_code}"
                check_failure = (f"check command failed ({why}): {self.config.check_command}\n"
                                 f"{run.output[-2000:]}")
                check_note = check_failure
            else:
                check_note = f"check command passed: {self.config.check_command}"
        text = await self._role_turn("critic", self.config.critic, CRITIC, (
            f"Review the build. touched_files: {', '.join(touched) or '(none)'}; "
            f"plan_targets: {', '.join(targets) or '(none)'}; {check_note}"))
        result = judge(text, touched, targets, check_failure)
        self.history.add(Message.user(result.response().to_text()))
        self._emit("critic_result", {"status": result.status, "reasons": list(result.reasons)})
        return result

    async def run(self, task: str) -> PipelineResult:
        """Run the roles on ``task`` until the critic passes or ``max_rounds`` is reached."""
        self.history.add(Message.user(f"Task: {task}"))
        await self._role_turn("librarian", self.config.librarian, LIBRARIAN, "Gather context for the task.")
        plan, critic = "", None
        targets: list[str] = []
        all_touched: set[str] = set()
        rounds = 0
        for rounds in range(1, self.config.max_rounds + 1):
            plan, targets = await self._architect(rounds)
            touched = await self._builder(targets)
            all_touched.update(touched)
            critic = await self._critic(touched, targets)
            self._emit("round_end", {"round": rounds, "status": critic.status})
            if critic.status == "PASS":
                break
        return PipelineResult(critic.status if critic else "FAIL", rounds, plan, tuple(targets),
                              tuple(sorted(all_touched)), critic, self.history.compactions,
                              tuple(self.history.messages))


def history_transcript(result: PipelineResult) -> str:
    """The run's final history as plain text (for logs)."""
    return transcript(list(result.messages))
