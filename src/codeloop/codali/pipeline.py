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

Over 500 lines: the roles share one history, one model-call path and the plan checks;
requests, answers and the critic's verdict already live in their own modules.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, assert_never

from codeloop.agent import events as ev
from codeloop.agent.budget import Budget, BudgetedClient, BudgetStop
from codeloop.agent.config import SessionConfig
from codeloop.agent.guards import ACCEPT, GuardAction, Turn, TurnGuard, nudge
from codeloop.agent.reply_reader import Reply
from codeloop.agent.session import Session
from codeloop.codali.answer import answer_request
from codeloop.codali.critic import CriticResult, judge, outside_plan, parse_verdict
from codeloop.codali.needs import NEED_TYPES
from codeloop.codali.prompts import (
    ARCHITECT,
    BUILDER,
    BUILDER_NUDGE,
    BUILDER_TEXT_SYNTAX,
    CRITIC,
    LIBRARIAN,
    SUMMARIZER,
)
from codeloop.codali.request import AgentRequest, AgentRequestError, Need, parse_agent_request
from codeloop.codali.shared_history import CHARS_PER_TOKEN, History, transcript
from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.environments.owned_files import read_owned_file
from codeloop.environments.resolver import relative_to_root, resolve_workspace_path
from codeloop.index import CodeIndex, normalize_path
from codeloop.index.ignore import walk_repository
from codeloop.llm import constrained
from codeloop.llm.client import Client
from codeloop.llm.errors import ContextLengthError
from codeloop.llm.types import Message, Request, Response, ResponseFormat, StreamEvent, ToolDefinition
from codeloop.policy import Decision
from codeloop.policy.approval import Effect, ToolCallRequest, ToolPolicy, allow_all
from codeloop.profiles.base import ProviderProfile
from codeloop.profiles.text import describe_text_tools
from codeloop.tools.call_path import PipelineCall, build_pipeline, open_environment
from codeloop.tools.outcomes import CommandOutcome
from codeloop.tools.registry import ToolRegistry
from codeloop.tools.shell import MAX_SHELL_TIMEOUT_MS, shell_tool
from codeloop.tools.tool_events import (
    ToolCallDecided,
    ToolCallEnded,
    ToolCallOutput,
    ToolCallPending,
    ToolCallStarted,
    ToolEvent,
)

OVERVIEW_CHARS = 3000
"""Most characters of the file tree that starts every run (about 750 tokens)."""
DIFF_CHARS = 4000
"""Most characters of the builder's changes shown to the critic (about 1,000 tokens)."""
KEEP_TEXT_BYTES = 200_000
"""Plan targets up to this size are kept before the build, so the critic sees a diff."""
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"enum": ["PASS", "FAIL"]},
        "reasons": {"type": "array", "items": {"type": "string"}},
        "suggested_fixes": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["status", "reasons", "suggested_fixes"],
    "additionalProperties": False,
}
"""The critic's verdict when it is asked again under a JSON Schema (constrained mode)."""

PipelineEvent = Callable[[str, dict[str, Any]], None]
"""``(kind, data)`` progress callback: role_start, reply (each model reply: role, text,
tool_calls), agent_request, plan_corrected, tool_call, builder_nudge, verdict_missing,
critic_result, history_compacted, round_end. Must not raise."""


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
    builder_tools: str = "native"
    """How the builder gets its tools: ``native`` (API tool calls), ``text`` (taught in the
    prompt with the text profile's tagged syntax, for models that write calls as text), or
    ``constrained`` (every reply sampled under a JSON Schema: one tool call or the final
    answer; for llama.cpp/vLLM servers, where a small model cannot drift into prose)."""
    overview: bool = True
    """Start the history with the repository's file tree (a ``docdex.tree`` response)."""

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
    """``PASS``, ``FAIL``, or ``BUDGET`` (a limit stopped the run, issue 36)."""
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


_TARGETS_KEY = re.compile(r"[\"'`*]*plan[ _-]?targets[\"'`*]*\s*:[*`]*", re.I)
_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_QUOTES = "\"'`*,; "


def _target(item: str) -> str:
    """One list item as a path: quotes, backticks and bold marks off; a note after the path
    (``greet.py - the greeting``, ``greet.py (main)``) dropped."""
    item = item.strip().strip(_QUOTES)
    item = re.split(r"\s+(?:[-–—(:#]|because\b)", item, maxsplit=1)[0]
    return item.strip().strip(_QUOTES)


def parse_plan_targets(text: str) -> list[str] | None:
    """The ``plan_targets`` list at the end of a plan, ``None`` if absent or empty.

    Written by small models in many shapes: YAML-like bullets, an inline or JSON list,
    ``Plan targets:``/``**plan_targets**:`` headings, numbered items, paths in backticks."""
    keys = list(_TARGETS_KEY.finditer(text))
    if not keys:
        return None
    after = text[keys[-1].end():].lstrip(" \t")
    items: list[str] = []
    if after.startswith("["):
        body = after[1:].split("]", 1)[0]
        try:
            loaded = json.loads(f"[{body}]")
            items = [str(x) for x in loaded] if isinstance(loaded, list) else []
        except ValueError:
            items = body.split(",")
    else:
        lines = after.split("\n")
        if lines[0].strip():
            items.append(lines[0])
        for line in lines[1:]:
            stripped = line.strip()
            bullet = _BULLET.match(stripped)
            if bullet:
                items.append(stripped[bullet.end():])
            elif stripped and stripped not in ("```", "}"):
                break
            elif items and not stripped:
                break
    # "<path of a file ...>" is the prompt's placeholder and "docdex.search" a need type, both
    # copied from the prompt by small models: not paths.
    targets = [t for t in (_target(i) for i in items) if t and t not in (".", "/") and "<" not in t
               and t not in NEED_TYPES and not t.startswith(("docdex.", "codali."))]
    if not targets:
        return None
    return [normalize_path(t) + ("/" if t.endswith("/") else "") for t in targets]


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {rel: (st.st_size, st.st_mtime_ns) for rel, st in walk_repository(str(root))}


def _read_text(path: Path, root: Path) -> str | None:
    """The file's text, or None when it is missing, too large, not UTF-8 or no regular file
    inside ``root`` (a FIFO is not waited on)."""
    try:
        return read_owned_file(path, max_bytes=KEEP_TEXT_BYTES, within=root).decode("utf-8")
    except (OSError, UnicodeDecodeError, WorkspaceError):
        return None


def describe_changes(root: Path, touched: list[str], kept: dict[str, str], existed: set[str],
                     limit: int = DIFF_CHARS) -> str:
    """The builder's changes as the critic sees them: a unified diff of each touched file
    whose earlier text is in ``kept``, the start of a file not in ``existed``, a note for
    the rest; at most ``limit`` characters, the cut stated."""
    parts: list[str] = []
    for rel in touched:
        now = _read_text(root / rel, root)
        if not (root / rel).exists():
            parts.append(f"deleted: {rel}")
        elif rel in kept and now is not None:
            parts.append("".join(difflib.unified_diff(kept[rel].splitlines(keepends=True),
                                                      now.splitlines(keepends=True),
                                                      f"a/{rel}", f"b/{rel}")).rstrip("\n") or f"unchanged text: {rel}")
        elif rel not in existed and now is not None:
            parts.append(f"new file: {rel}\n" + "\n".join(now.splitlines()[:20]))
        else:
            parts.append(f"changed (no earlier copy kept): {rel}")
    text = "\n".join(parts)
    if len(text) > limit:
        text = text[:limit].rsplit("\n", 1)[0] + f"\n[changes cut at {limit} of {len(text)} characters]"
    return text


def _restrict_paths(registry: ToolRegistry, targets: list[str]) -> list[ToolDefinition]:
    """The registry's definitions, where a tool that declares it writes (``codeloop.tools.effects``)
    takes a ``file_path`` which may only be one of ``targets`` (an enum the constrained sampler
    enforces). Left as they are when a target is a directory."""
    tools = registry.definitions()
    if not targets or any(t.endswith("/") for t in targets):
        return tools
    out = []
    for tool in tools:
        props = tool.parameters.get("properties") or {}
        if Effect.WRITE in registry.effects(tool.name).effects and "file_path" in props:
            props = {**props, "file_path": {**props["file_path"], "enum": list(targets)}}
            tool = ToolDefinition(tool.name, tool.description, {**tool.parameters, "properties": props})
        out.append(tool)
    return out


class RolesPipeline:
    """One run of the roles over one repository."""

    def __init__(self, client: Client, repo_root: str | Path, config: PipelineConfig, *,
                 env: ExecutionEnvironment | None = None, registry: ToolRegistry | None = None,
                 on_event: PipelineEvent | None = None, budget: Budget | None = None,
                 policy: ToolPolicy | None = None) -> None:
        self.budget = budget
        """Limits every role's calls spend from (issue 36; the run's, shared with the builder)."""
        self.client: Client | BudgetedClient = client if budget is None else BudgetedClient(client, budget)
        self.root = Path(os.path.realpath(repo_root))
        self.config = config
        if env is None:
            env = open_environment(self.root, sandbox="off", network=True)
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
        self.policy = policy
        """The face's POLICY step for every call (the builder's, under its plan guard, and the
        critic's check command); None allows them."""
        check = shell_tool()
        self._check = build_pipeline(ToolRegistry.of([check]), env, policy=policy, events=self._critic_event)
        """The critic's pipeline: the check command is a judged, announced ``shell`` call."""
        self._check_tool = check.name
        self._turn_replies: list[str] = []
        """Every reply of the last role turn (a plan_targets list may sit beside a request)."""
        self._kept: dict[str, str] = {}
        """Text of the plan targets before the last build (for the critic's diff)."""
        self._existed: set[str] = set()
        """Files that existed before the last build."""
        self._task = ""
        self.builder_session: Session | None = None
        """The agent Session of the last build."""

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

    async def _complete(self, role: str, choice: ModelChoice, system: str,
                        tools: list[ToolDefinition] | None = None,
                        response_format: ResponseFormat | None = None) -> Response:
        """One model call for ``role`` on the shared history (compacted first when it nears
        the window), its reply shown as a ``reply`` event."""
        # The prompt and the reply share the window.
        budget = choice.context_window - min(self.config.max_output_tokens or 0, choice.context_window // 2)
        if await self.history.fit(self._summarize, len(system), budget):
            self._emit("history_compacted", {"messages": len(self.history.messages())})

        def request() -> Request:
            return Request(model=choice.model, provider=choice.provider, tools=tools,
                           max_tokens=self.config.max_output_tokens, response_format=response_format,
                           messages=[Message.system(system), *self.history.messages()])

        try:
            response = await self.client.complete(request())
        except ContextLengthError:
            # The estimate was short of the real count: compact now and ask once more.
            if not await self.history.fit(self._summarize, len(system), budget, force=True):
                raise
            self._emit("history_compacted", {"messages": len(self.history.messages())})
            response = await self.client.complete(request())
        self._emit("reply", {"role": role, "text": response.text,
                             "tool_calls": [c.name for c in response.tool_calls]})
        return response

    async def _role_turn(self, role: str, choice: ModelChoice, system: str, instruction: str) -> str:
        """Ask ``role`` until it answers without an AGENT_REQUEST; answer each request."""
        self._emit("role_start", {"role": role})
        self.history.add(Message.user(f"[{role}] {instruction}"))
        self._turn_replies = []
        for attempt in range(self.config.max_context_requests + 2):
            text = (await self._complete(role, choice, system)).text
            self._turn_replies.append(text)
            self.history.add(Message.assistant(text))
            if "AGENT_REQUEST" not in text or attempt > self.config.max_context_requests:
                break
            if attempt == self.config.max_context_requests:
                self.history.add(Message.user("No more context requests in this turn; give your final answer now."))
            else:
                self.history.add(Message.user(await self._answer(
                    role, text, "Send a corrected request, or give your final answer.")))
        return text

    async def _answer(self, role: str, text: str, otherwise: str) -> str:
        """The answer to the AGENT_REQUEST in ``text``; a malformed one goes back with ``otherwise``."""
        try:
            # The pipeline knows who asks: a wrong role or one bad need out of several
            # becomes a warning in the response, not a lost turn (small models do both).
            request = parse_agent_request(text, role=role, skip_bad_needs=True)
        except AgentRequestError as exc:
            return f"Codali could not parse your AGENT_REQUEST: {exc}. {otherwise}"
        self._emit("agent_request", {"role": role, "needs": [n.type for n in request.needs]})
        response = await answer_request(request, self.root, env=self.env, index=self.index,
                                        content_budget=self.config.content_budget)
        return response.to_text()

    # Roles ------------------------------------------------------------------------------

    async def _architect(self, round_number: int) -> tuple[str, list[str]]:
        instruction = ("Write the plan for the task." if round_number == 1 else
                       "The critic failed the last build (see the critic.result above). Revise the plan.")
        plan = await self._role_turn("architect", self.config.architect, ARCHITECT, instruction)
        targets = self._turn_targets()
        problem = self._targets_problem(targets)
        if problem:
            self._emit("plan_corrected", {"problem": problem})
            plan = await self._role_turn("architect", self.config.architect, ARCHITECT, problem)
            targets = self._turn_targets() or targets
            if targets and (mapped := self._map_misplaced(targets)):
                # Asked once and still wrong, while the user's task names the real file.
                targets = [mapped.get(t, t) for t in targets]
                self._emit("plan_corrected", {"mapped": mapped})
                self.history.add(Message.user("Codali corrected plan_targets to the repository's paths: "
                                              + ", ".join(f"{k} -> {v}" for k, v in mapped.items())))
        return plan, list(dict.fromkeys(targets or []))

    def _map_misplaced(self, targets: list[str]) -> dict[str, str]:
        """Missing targets → the repository file of the same name that the task names (small
        models write ``greet/greet.py`` for the task's ``greet.py`` even after being told).
        A missing target the task does not point elsewhere for stays: it is a new file."""
        named: dict[str, str] = {}
        for word in re.findall(r"[\w./-]+", self._task):
            try:  # "greet.py." ends a sentence; "../x" is no repository file
                found = resolve_workspace_path(self.root, word.rstrip("."), must_exist=True)
            except WorkspaceError:
                continue
            if found.is_file():
                rel = relative_to_root(self.root, found)
                named.setdefault(rel.rsplit("/", 1)[-1], rel)
        return {t: named[name] for t in targets if not t.endswith("/") and not (self.root / t).exists()
                and (name := t.rsplit("/", 1)[-1]) in named and named[name] not in targets}

    def _turn_targets(self) -> list[str] | None:
        """The plan_targets of the turn's final plan, else of its latest reply that had some
        (small models write them beside an AGENT_REQUEST and leave them out of the plan)."""
        root = str(self.root).strip("/") + "/"
        for reply in reversed(self._turn_replies):
            targets = parse_plan_targets(reply)
            if targets is not None:
                # An absolute path inside the repository (models copy meta.repo_root) is its
                # repository-relative path; normalize_path already dropped the leading "/".
                return [t[len(root):] if t.startswith(root) else t for t in targets]
        return None

    def _targets_problem(self, targets: list[str] | None) -> str | None:
        """What to tell the architect when its plan_targets cannot guide the builder: none at
        all, or paths that do not exist where the repository has a file of that name (small
        models write ``path/to/greet.py`` for ``greet.py``). New files are fine."""
        if targets is None:
            return ("Your plan has no plan_targets list. Repeat the plan ending with "
                    "'plan_targets:' and one '- \"path\"' line per file.")
        by_name: dict[str, list[str]] = {}
        for rel, _ in walk_repository(str(self.root)):
            by_name.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
        wrong = [(t, by_name[name]) for t in targets if not t.endswith("/")
                 and not (self.root / t).exists() and (name := t.rsplit("/", 1)[-1]) in by_name]
        if not wrong:
            return None
        listed = "; ".join(f"{t} (the repository has {', '.join(sorted(have)[:3])})" for t, have in wrong)
        return (f"These plan_targets do not exist in the repository: {listed}. Paths are relative to the "
                "repository root. Repeat the plan_targets list with the real paths (a new file you mean to "
                "create may stay).")

    def _plan_policy(self, targets: list[str]) -> ToolPolicy:
        """Refuses a write outside ``targets`` before it runs (the critic would fail the round
        for it; refused now, the builder can still make the planned change); every other call
        goes to the face's policy. What a call may change is its tool's declaration
        (``codeloop.tools.effects``): every path a write names (all files of a patch) must be a
        target; a call that may change files it cannot name (a shell line that does not only
        read, an MCP tool) asks, and with nobody to answer it does not run."""

        inner = self.policy or allow_all

        async def policy(call: ToolCallRequest, env: ExecutionEnvironment) -> Decision:
            if not targets or not call.changes:
                return await inner(call, env)
            if call.paths is None:
                if call.line_only_reads:
                    return await inner(call, env)
                return Decision.ask(
                    f"{call.name} may change files outside plan_targets ({', '.join(targets)}), and which ones "
                    "cannot be known before it runs; change the plan_targets with the file tools (the check "
                    "command runs after the build)", rule="plan-guard")
            outside = []
            for path in call.paths:
                try:
                    # Where the write would really land (symlinks followed), as the critic will see it.
                    rel = relative_to_root(self.root, resolve_workspace_path(self.root, path))
                except WorkspaceError:
                    continue  # outside the repository: the tool's own path check answers it
                if outside_plan([rel], targets):
                    outside.append(rel)
            if not outside:
                return await inner(call, env)
            return Decision.deny(
                f"{call.name} refused: {', '.join(outside)} {'is' if len(outside) == 1 else 'are'} not in "
                f"plan_targets ({', '.join(targets)}). Change only the plan_targets; if another file must change, "
                "say so in your final reply so the architect can revise the plan.", rule="plan-guard")

        return policy

    async def _builder(self, targets: list[str]) -> list[str]:
        """The builder is an agent Session continuing the shared history, its writes held to
        the plan by the plan policy, its model calls made through :meth:`_complete`."""
        self._emit("role_start", {"role": "builder"})
        before = _snapshot(self.root)
        # Earlier text of the planned files, so the critic sees what changed as a diff.
        self._kept = {t: text for t in targets if (text := _read_text(self.root / t, self.root)) is not None}
        self._existed = set(before)
        named = ", ".join(targets) or "(none: the plan names no files; find them with the tools)"
        mode, choice = self.config.builder_tools, self.config.builder
        definitions = self.registry.definitions()
        system, reply_format = BUILDER, None
        if mode == "text":
            system = "\n\n".join([BUILDER, BUILDER_TEXT_SYNTAX, describe_text_tools(definitions, compact=True)])
        elif mode == "constrained":
            # The sampler cannot write a path outside the plan: the plan policy never has to.
            reply_format = constrained.response_format(_restrict_paths(self.registry, targets))
        profile = ProviderProfile("codali-builder", choice.model, self.registry, BUILDER, choice.provider,
                                  supports_streaming=False, context_window_size=choice.context_window,
                                  native_tool_calls=mode != "text", max_output_tokens=self.config.max_output_tokens)
        config = SessionConfig(max_model_calls_per_input=self.config.max_builder_steps, max_subagent_depth=0,
                               tool_call_recovery=True, check_claims=False, max_retries=0, track_reads=False,
                               constrained_decoding="on" if mode == "constrained" else "off")
        guard = _BuilderTurn(self, before)
        self.builder_session = session = Session(
            profile, self.env, config, _BuilderClient(self, reply_format), policy=self._plan_policy(targets),
            guards=(lambda: guard,), history=self.history, system_prompt=system)
        session.subscribe(self._builder_event)
        await session.submit(f"[builder] Carry out the latest plan. plan_targets: {named}")
        if session.error is not None:
            raise session.error
        after = _snapshot(self.root)
        return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))

    def _builder_event(self, event: ev.SessionEvent) -> None:
        if isinstance(event, ev.ToolCallEnd):
            self._emit("tool_call", {"name": event.tool_name, "is_error": event.is_error})

    async def _critic(self, touched: list[str], targets: list[str]) -> CriticResult:
        check_failure = None
        check_note = "no check command configured"
        if command := self.config.check_command:
            check_failure = await self._run_check(command)
            check_note = check_failure or f"check command passed: {command}"
        changes = describe_changes(self.root, touched, self._kept, self._existed) if touched else "(none)"
        text = await self._role_turn("critic", self.config.critic, CRITIC, (
            f"Review the build. touched_files: {', '.join(touched) or '(none)'}; "
            f"plan_targets: {', '.join(targets) or '(none)'}; {check_note}\n"
            f"Changes made by the builder:\n{changes}"))
        if parse_verdict(text)[0] is None:
            # No verdict found: ask once for the exact form before the gate counts it as FAIL.
            self._emit("verdict_missing", {"reply": text[:200]})
            if self.config.builder_tools == "constrained":
                # The server samples under JSON Schemas: the verdict cannot go missing twice.
                self.history.add(Message.user("[critic] Your reply has no verdict. Reply with the verdict "
                                              'as JSON: {"status": "PASS" or "FAIL", "reasons": [...], '
                                              '"suggested_fixes": [...]}.'))
                text = (await self._complete("critic", self.config.critic, CRITIC, response_format=ResponseFormat(
                    "json_schema", VERDICT_SCHEMA, strict=True))).text
                self.history.add(Message.assistant(text))
            else:
                text = await self._role_turn("critic", self.config.critic, CRITIC, (
                    "Your reply has no verdict. Reply with the line 'status: PASS' or 'status: FAIL' first "
                    "(plain text, not JSON), then 'reasons:' and 'suggested_fixes:' lists if it fails."))
        result = judge(text, touched, targets, check_failure)
        self.history.add(Message.user(result.response().to_text()))
        self._emit("critic_result", {"status": result.status, "reasons": list(result.reasons)})
        return result

    async def _run_check(self, command: str) -> str | None:
        """Run the check command through the critic's pipeline; why it failed, or None."""
        result = await self._check.run(PipelineCall(self._check_tool, {
            "command": command, "timeout_ms": min(self.config.check_timeout_ms, MAX_SHELL_TIMEOUT_MS)}))
        run = result.data
        if not isinstance(run, CommandOutcome):  # refused by the policy, or it could not start at all
            return f"check command not run: {result.output}" if result.is_error else None
        if run.status == "ok":
            return None
        why = {"timed_out": "timed out", "not_started": "did not start",
               "killed": f"killed by signal {run.signal}"}.get(run.status, f"exit {run.exit_code}")
        return f"check command failed ({why}): {command}\n{run.result.output[-2000:]}"

    def _critic_event(self, event: ToolEvent) -> None:
        """The critic pipeline's events as codali's ``tool_call`` lines (the builder's say
        ``name`` and ``is_error`` too)."""
        match event:
            case ToolCallStarted() | ToolCallOutput() | ToolCallPending() | ToolCallDecided():
                pass  # the critic's pipeline has no pending store: nothing waits
            case ToolCallEnded():
                self._emit("tool_call", {"role": "critic", "name": event.tool_name, "is_error": event.is_error})
            case _:
                assert_never(event)

    async def _overview(self) -> str | None:
        """The repository's file tree as a CODALI_RESPONSE, at most ``OVERVIEW_CHARS``: every
        role then knows the real paths without asking (small models guess ``path/to/x.py``)."""
        request = AgentRequest("librarian", "overview", (Need("docdex.tree", {"maxDepth": 3, "path": ""}, 0, None),))
        response = await answer_request(request, self.root, env=self.env, index=self.index)
        if not response.results or not response.results[0].get("tree"):
            return None
        result, warnings = dict(response.results[0]), list(response.warnings)
        # The index is fresh now: shallower trees come straight from it, not through a second refresh.
        for depth in (2, 1):
            if len(str(result["tree"])) <= OVERVIEW_CHARS:
                break
            result.update(maxDepth=depth, tree=self.index.tree(depth, ""))
        tree = str(result["tree"])
        if len(tree) > OVERVIEW_CHARS:
            cut = tree[:OVERVIEW_CHARS].rsplit("\n", 1)[0]
            result["tree"] = cut
            warnings.append(f"tree_truncated: {cut.count(chr(10)) + 1} of {tree.count(chr(10)) + 1} lines; "
                            "ask docdex.tree with a path")
        response = replace(response, results=(result,), warnings=tuple(warnings))
        return "Codali's overview of the repository (no request needed):\n" + response.to_text()

    async def run(self, task: str) -> PipelineResult:
        """Run the roles on ``task`` until the critic passes or ``max_rounds`` is reached; with a
        budget, status ``BUDGET`` when a limit left no room for the next call."""
        if self.budget is None:
            return await self._run(task)
        self.budget.start_clock()
        try:
            return await self._run(task)
        except BudgetStop as stop:
            self._emit("budget", {"limit": stop.limit, "used": self.budget.used(0)})
            return PipelineResult("BUDGET", 0, "", (), (), None, self.history.compactions,
                                  tuple(self.history.messages()))
        finally:
            self.budget.stop_clock()

    async def _run(self, task: str) -> PipelineResult:
        self._task = task
        self.history.add(Message.user(f"Task: {task}"))
        if self.config.overview and (overview := await self._overview()):
            self.history.add(Message.user(overview))
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
                              tuple(self.history.messages()))


class _BuilderTurn(TurnGuard):
    """The builder's turn guard: an AGENT_REQUEST is answered (the builder is a codali role
    too, spec §1); "Done." with no tool call and nothing changed (a small model's usual first
    reply) gets one BUILDER_NUDGE, then its word is final (the critic judges the result)."""

    def __init__(self, pipeline: RolesPipeline, before: dict[str, tuple[int, int]]) -> None:
        self.pipeline, self.before = pipeline, before
        self.ran_tool = self.nudged = False

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        pipeline = self.pipeline
        if reply.calls:
            self.ran_tool = True
        elif pipeline.config.builder_tools != "constrained" and "AGENT_REQUEST" in reply.text:
            return nudge(await pipeline._answer("builder", reply.text, "Use the tools to carry out the plan."))
        elif not (self.ran_tool or self.nudged or _snapshot(pipeline.root) != self.before):
            self.nudged = True
            pipeline._emit("builder_nudge", {})
            return nudge(BUILDER_NUDGE)
        return ACCEPT


@dataclass(frozen=True)
class _BuilderClient:
    """The builder Session's model: each call goes through :meth:`RolesPipeline._complete`
    (the shared history compacted near the window, a ``reply`` event), with the Session's
    prompt, tools and reply format (the plan-restricted one when constrained)."""

    pipeline: RolesPipeline
    reply_format: ResponseFormat | None

    async def complete(self, request: Request) -> Response:
        return await self.pipeline._complete("builder", self.pipeline.config.builder, request.messages[0].text,
                                             request.tools, self.reply_format or request.response_format)

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        raise NotImplementedError("the builder's profile does not stream")


def history_transcript(result: PipelineResult) -> str:
    """The run's final history as plain text (for logs)."""
    return transcript(list(result.messages))
