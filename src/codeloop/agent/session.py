"""The Session: the agentic loop of loop spec §2 (state machine §2.3, loop §2.5).

``await session.submit(text)`` appends the input, then alternates model call → tool round
until the model answers with text only, a limit hits, the session is aborted, or an
unrecoverable error closes it. Events (§2.9) go to subscribers as they happen; see
:meth:`Session.events` (async iterator) and :meth:`Session.run_sync` (synchronous).

Invariants:
- Every tool call gets exactly one result, in call order, even when calls run in
  parallel; the model gets the truncated output, ``TOOL_CALL_END`` the full one.
- Nothing the model sends raises: bad calls become error results (Appendix B).
- Abort and fatal errors follow Appendix B's shutdown: cancel the model call, SIGTERM the
  running commands' process groups, up to 2 s, SIGKILL what remains (cancellation +
  ``environment.cleanup()``), emit ``SESSION_END`` with state ``closed``, close subagents;
  the session is then CLOSED for good.

Over 500 lines: the loop, its tool round and the lifecycle share one state (history,
listeners, the running task); split apart, each part would need the whole session.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING, Any, assert_never

from codeloop.agent import events as ev
from codeloop.agent.budget import Budget, BudgetStop, InputTracker, prompt_tokens, require_price
from codeloop.agent.call_forms import CallForms
from codeloop.agent.compaction import RECALL_TOOL, Dropped, DroppedOutputs, recall_tool, shortened_note
from codeloop.agent.config import SessionConfig
from codeloop.agent.guards import ACCEPT, DEFAULT_GUARDS, GuardAction, Turn, TurnGuard
from codeloop.agent.history import (
    AssistantTurn,
    CallResult,
    History,
    SteeringTurn,
    ToolResultsTurn,
    UserTurn,
    native_messages,
    text_messages,
)
from codeloop.agent.model_calls import Emit, ModelClient, call_model
from codeloop.agent.project_docs import discover_project_docs, render_project_docs
from codeloop.agent.prompts import gather_environment_context, render_environment
from codeloop.agent.reply_reader import Reply, ReplyReader
from codeloop.agent.reply_rescue import ReplyRescue
from codeloop.agent.small_model.checks import CheckResult
from codeloop.agent.subagents import SubagentManager, subagent_tools
from codeloop.environments.base import ExecutionEnvironment
from codeloop.llm import constrained
from codeloop.llm.catalog import get_model_info
from codeloop.llm.errors import AuthenticationError, ContextLengthError, NotFoundError, SDKError
from codeloop.llm.types import ImageData, Message, Request, Response, ToolCall, Usage
from codeloop.policy.approval import ToolCallRequest
from codeloop.profiles.base import ProviderProfile
from codeloop.profiles.prompts import NATIVE_COMPACT
from codeloop.tools import ToolPolicy, ToolRegistry, TruncationConfig
from codeloop.tools.apply_patch import APPLY_PATCH, apply_patch_tool
from codeloop.tools.call_path import Pipeline, PipelineCall, build_pipeline
from codeloop.tools.diagnostics import Diagnostics
from codeloop.tools.files import READ_FILE, READ_MANY_FILES
from codeloop.tools.hooks import Hooks
from codeloop.tools.pipeline import Answer, Approvals, Checkpoint
from codeloop.tools.registry import ToolOutput
from codeloop.tools.tool_events import (
    ToolCallDecided,
    ToolCallEnded,
    ToolCallOutput,
    ToolCallPending,
    ToolCallStarted,
    ToolEvent,
)
from codeloop.tools.truncation import DEFAULT_TOOL_LIMITS, FALLBACK_CHAR_LIMIT

if TYPE_CHECKING:
    from codeloop.agent.small_model.strategy import Baseline


class DraftStopped(Exception):
    """Raised from a draft's stream when the rest of it would not be read: ``text`` is the reply
    to keep, ``streamed`` all that came."""

    def __init__(self, text: str, streamed: str) -> None:
        super().__init__("the draft was stopped where the rest would not be read")
        self.text = text
        self.streamed = streamed


DRAFT_PROGRESS_CHARS = 200
"""Characters of a streamed strategy draft between two progress notes."""
CHARS_PER_TOKEN = 4
"""The §5.5 estimate: 1 token ≈ 4 characters."""


def fit_thinking(request: Request) -> Request:
    """Anthropic raises ``max_tokens`` above the thinking budget of ``reasoning_effort``;
    a budget that lowered it below that budget turns thinking off for the call instead."""
    if request.provider != "anthropic" or not request.reasoning_effort or request.max_tokens is None:
        return request
    from codeloop.llm.adapters.anthropic import THINKING_BUDGETS

    if request.max_tokens <= THINKING_BUDGETS.get(request.reasoning_effort, max(THINKING_BUDGETS.values())):
        return dataclasses.replace(request, reasoning_effort=None)
    return request


class SessionState(StrEnum):
    """Lifecycle states (§2.3)."""

    IDLE = "idle"
    PROCESSING = "processing"
    AWAITING_INPUT = "awaiting_input"
    CLOSED = "closed"


LLMClient = ModelClient
"""What the session needs of :class:`codeloop.llm.client.Client` (single-shot calls)."""


class SessionClosedError(RuntimeError):
    """Raised by ``submit`` on a CLOSED session (a developer error, not a model error)."""


Listener = Callable[[ev.SessionEvent], None]
"""Receives every event synchronously, in order; must not raise."""


class Session:
    """One conversation of a model with a workspace (§2.1)."""

    def __init__(
        self,
        profile: ProviderProfile,
        environment: ExecutionEnvironment,
        config: SessionConfig | None = None,
        client: LLMClient | None = None,
        *,
        policy: ToolPolicy | None = None,
        approvals: Approvals | None = None,
        checkpoint: Checkpoint | None = None,
        hooks: Hooks | None = None,
        depth: int = 0,
        working_subdir: str = "",
        guards: Sequence[Callable[[], TurnGuard]] = DEFAULT_GUARDS,
        history: History | None = None,
        system_prompt: str | None = None,
        budget: Budget | None = None,
    ) -> None:
        if client is None:
            raise ValueError("Session needs an LLM client: Session(profile, env, config, client)")
        self.id = str(uuid.uuid4())
        self.profile = profile
        self.environment = environment
        self.config = config or SessionConfig()
        self.client = client
        self.policy = policy
        self.approvals = approvals
        """Where this session's asks wait for an answer (the pending store; issue 34), as entries
        of the root session's id (a subagent's asks are its parent's); None: an ask is held and
        the model is told so."""
        self.checkpoint = checkpoint
        """The pipeline's CHECKPOINT seam (``codeloop.sessions`` sets it to snapshot file writes)."""
        self.step = 0
        """The current turn (model replies so far), counted over the session's whole log: the
        CHECKPOINT seam's step. A resumed session continues the count (``codeloop.sessions``)."""
        self.step_of: Session = self
        """Whose turn a call belongs to: a subagent's calls are part of its parent's turn."""
        self.hooks = hooks
        """The user's ``[[hooks]]`` (:mod:`codeloop.tools.hooks`); their failures are WARNING events."""
        self.depth = depth
        self.working_subdir = working_subdir
        self.guards = tuple(guards)
        """Makers of the turn guards (:mod:`codeloop.agent.guards`), one fresh set per input."""
        self.state = SessionState.IDLE
        self.history = history if history is not None else History(native_messages if profile.native_tool_calls else text_messages)
        """The conversation; a given one is continued (and its conversion kept)."""
        self.fixed_prompt = system_prompt
        """Replaces the profile's layered prompt (no environment block or project docs gathered)."""
        self.error: Exception | None = None
        """The error that closed the session, if one did."""
        self.end_reason = ""
        """Why the last input ended: ``completed``, ``round_limit``, ``turn_limit``, ``aborted``, ``error``."""
        self.last_text = ""
        """The last assistant text (the answer of the last input)."""
        self.budget = budget
        """Limits of cost, tokens and time (issue 36), shared with subagents; None: no limits."""
        self._price = require_price(profile.model) if budget and budget.limits.cost_usd is not None else None
        self._sent = InputTracker()
        self.dropped = DroppedOutputs()
        """Tool outputs compaction took out of the history; ``recall_output`` reads them back."""
        self.subagents = SubagentManager(self)
        self.strategy_ran: list[str] = []
        """Commands the small-model strategy ran successfully this session (their reruns are checks)."""
        self._drafts_left = -1
        """Model calls the strategy's input may still make (-1: no limit)."""
        self._drafts_made = 0
        """Drafts of the strategy in this session: each counts as a turn against ``max_turns``."""
        self._steering: deque[str] = deque()
        self._followups: deque[str] = deque()
        self._listeners: list[Listener] = []
        self._started = False
        self._environment_block = ""
        self._project_docs = ""
        self._registry_key: tuple[Any, ...] = ()
        self._reader: tuple[Any, ReplyReader | None] = (None, None)
        self._registry = ToolRegistry()
        self._system_prompt: tuple[Any, str] = (None, "")
        self._task: asyncio.Task[None] | None = None
        self._aborted = False
        self._constrained = False
        """True when replies are constrained to one JSON call or answer (issue 10)."""
        self._answer: Answer | None = None
        """The pipeline's ANSWER step for the input running: its guards' ``before_call``."""
        self._truncation = TruncationConfig(self._output_limits(), self.config.tool_line_limits)
        self._built: tuple[tuple[Any, ...], Pipeline | None] = ((None,) * 7, None)
        """The pipeline and the settings it was built from (:meth:`_pipeline`)."""

    # -- public API ---------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every future event; returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    async def events(self) -> AsyncIterator[ev.SessionEvent]:
        """Every event from now on, until (and including) the ``SESSION_END`` that closes the session."""
        if self.state == SessionState.CLOSED:
            return
        queue: asyncio.Queue[ev.SessionEvent] = asyncio.Queue()
        unsubscribe = self.subscribe(queue.put_nowait)
        try:
            while True:
                event = await queue.get()
                yield event
                if isinstance(event, ev.SessionEnd) and event.state == SessionState.CLOSED:
                    return
        finally:
            unsubscribe()

    async def submit(self, user_input: str, images: Sequence[ImageData] = ()) -> str:
        """Process one input (with ``images`` attached) through the loop (§2.5) and its queued
        follow-ups; return the last assistant text. Raises :class:`SessionClosedError` when
        the session is closed."""
        return await self._submit(user_input, images)

    async def go_on(self) -> str:
        """Go on with the last input where it stopped (a budget paused it, issue 36): no new
        user turn, the loop continues from the history. Returns the last assistant text."""
        return await self._submit(None, ())

    async def _submit(self, user_input: str | None, images: Sequence[ImageData]) -> str:
        if self.state == SessionState.CLOSED:
            raise SessionClosedError(f"session {self.id} is closed; create a new Session")
        if self.state == SessionState.PROCESSING:
            raise RuntimeError("submit() while processing: use steer() or follow_up()")
        self.state = SessionState.PROCESSING
        await self._start()
        self._task = asyncio.create_task(self._process_inputs(user_input, tuple(images)))
        try:
            await asyncio.shield(self._task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._aborted and not (current and current.cancelling()):
                return self.last_text  # abort() from elsewhere: submit simply ends
            # The caller itself was cancelled (Ctrl-C): that aborts the session.
            await self.abort()
            raise
        finally:
            self._task = None
        return self.last_text

    process_input = submit

    def steer(self, message: str) -> None:
        """Inject ``message`` after the current tool round (or before the next call) (§2.6)."""
        self._steering.append(message)

    def follow_up(self, message: str) -> None:
        """Process ``message`` as a new input once the current one completes (§2.6)."""
        self._followups.append(message)

    def set_reasoning_effort(self, effort: str | None) -> None:
        """Change ``reasoning_effort``; takes effect on the next model call (§2.7)."""
        self.config = dataclasses.replace(self.config, reasoning_effort=effort)

    async def abort(self) -> None:
        """Stop now (§2.8 abort): cancel the model call and tools, kill commands, CLOSED."""
        if self.state == SessionState.CLOSED:
            return
        self._aborted = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self._shutdown("aborted", kill_processes=True)

    async def close(self) -> None:
        """Close an idle session (IDLE → CLOSED); aborts one that is processing."""
        if self._task is not None and not self._task.done():
            await self.abort()
            return
        if self.state != SessionState.CLOSED:
            await self._shutdown("closed", kill_processes=False)

    def run_sync(self, user_input: str, *, close: bool = True) -> list[ev.SessionEvent]:
        """Synchronous convenience: submit, (optionally) close, return all events emitted."""
        collected: list[ev.SessionEvent] = []
        unsubscribe = self.subscribe(collected.append)

        async def run() -> None:
            await self.submit(user_input)
            if close:
                await self.close()

        try:
            asyncio.run(run())
        finally:
            unsubscribe()
        return collected

    # -- the loop (§2.5) ------------------------------------------------------------------

    async def _process_inputs(self, user_input: str | None, images: tuple[ImageData, ...]) -> None:
        if self.budget is not None:
            self.budget.start_clock()
        try:
            reason = await self._budgeted_input(user_input, images)
            while self._followups and reason != "budget":
                reason = await self._budgeted_input(self._followups.popleft(), ())
            if self.budget is not None and reason not in ("budget", "turn_limit"):
                self._emit_budget(None)
            self.end_reason = reason
            if self.hooks:
                await self._hook("stop", reason=reason, final_text=self.last_text)
            awaiting = reason == "completed" and self.last_text.rstrip().endswith("?")
            self.state = SessionState.AWAITING_INPUT if awaiting else SessionState.IDLE
            self._emit(ev.SessionEnd, state=self.state.value, reason=reason, final_text=self.last_text)
        except ContextLengthError as exc:
            self._emit(ev.WarningEvent, message=f"Context window exceeded: {exc}", code="context_length")
            await self._fail(exc)
        except Exception as exc:  # an adapter bug must close the session, not leak a traceback
            await self._fail(exc)
        finally:
            if self.budget is not None:
                self.budget.stop_clock()

    async def _budgeted_input(self, user_input: str | None, images: tuple[ImageData, ...]) -> str:
        try:
            return await self._process_one(user_input, images)
        except BudgetStop as stop:  # from this session's budget, or a budgeted client's (codali's builder)
            if self.budget is not None:
                self._emit_budget(stop.limit)
            return "budget"

    async def _process_one(self, user_input: str | None, images: tuple[ImageData, ...] = ()) -> str:
        """One input through the loop; ``None`` goes on with the last input (a paused one)."""
        self.state = SessionState.PROCESSING
        if user_input is not None and self.hooks:
            added = await self._hook("user_prompt", prompt=user_input)
            user_input = "\n\n".join([user_input, *added])
        last_task = next((t.content for t in reversed(self.history.turns) if isinstance(t, UserTurn)), "")
        if self.uses_strategy:
            return await self._strategy_input(user_input if user_input is not None else last_task,
                                              images if user_input is not None else None)
        turn = Turn(self, task=user_input if user_input is not None else last_task)
        guards = [guard for make in self.guards if (guard := make()).applies(self)]
        if user_input is not None:
            user_input = await self._guarded_input(turn, guards)
            self.history.append(UserTurn(user_input, images=images))
            self._emit(ev.UserInput, content=user_input)
        else:
            await self._guarded_input(turn, guards)
        self._drain_steering()
        # Only the guards that override a hook are called for it (two awaits a round saved per guard).
        reply_guards = [g for g in guards if type(g).after_reply is not TurnGuard.after_reply]
        tools_guards = [g for g in guards if type(g).after_tools is not TurnGuard.after_tools]
        warned_context = False
        calls_left = self.config.max_model_calls_per_input or -1
        while True:
            if turn.rounds >= self.config.max_tool_rounds_per_input or not calls_left:
                self._emit(ev.TurnLimit, round=turn.rounds)
                return "round_limit"
            if self.config.max_turns > 0 and self.history.turn_count >= self.config.max_turns:
                self._emit(ev.TurnLimit, total_turns=self.history.turn_count)
                if self.budget is not None:
                    self._emit_budget("turns")
                return "turn_limit"

            calls_left -= 1
            response = await self._call_model()
            reply = await self._read(response)
            self.last_text = reply.text
            reasoning = response.reasoning
            self.history.append(AssistantTurn(
                content=reply.text, tool_calls=reply.calls, reasoning=reasoning,
                usage=response.usage, response_id=response.id,
                message=None if reply.recovered or not self.profile.native_tool_calls else response.message,
            ))
            usage = response.usage
            self.step += 1
            self._emit(ev.AssistantTextEnd, text=reply.text, reasoning=reasoning,
                       tool_call_count=len(reply.calls), input_tokens=usage.input_tokens,
                       output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_tokens or 0)
            warned_context = warned_context or self._check_context()
            action = ACCEPT
            for guard in reply_guards:
                if (action := await guard.after_reply(reply, turn)).kind != "accept":
                    break
            if action.kind == "end":
                return self._guard_end(action, turn)
            if action.kind == "nudge":
                self._inject(action.text, action.event)
                continue
            if action.call is not None:  # a guard completes the reply with a call, or replaces its calls
                self._emit(ev.WarningEvent, message=action.note, code="verify")
                last = self.history.turns[-1]
                assert isinstance(last, AssistantTurn)  # appended above, for this reply
                content = action.text if reply.calls else last.content
                reply = dataclasses.replace(reply, calls=(action.call,))
                self.history.replace_last(dataclasses.replace(last, content=content, tool_calls=reply.calls,
                                                              message=None))
            if not reply.calls:
                return self._guard_end(action, turn) or "completed"

            turn.rounds += 1
            results = await self._execute_tool_calls(list(reply.calls))
            self.history.append(ToolResultsTurn(tuple(results)))
            self._fit_history()
            self._drain_steering()
            for guard in tools_guards:
                action = await guard.after_tools(reply.calls, results, turn)
                if action.kind == "end":
                    return self._guard_end(action, turn)
                if action.kind == "nudge":
                    self._inject(action.text, action.event)

    # -- the small-model strategy (issue 33) -------------------------------------------------

    @property
    def uses_strategy(self) -> bool:
        """True when inputs run the small-model strategy: ``small_model_strategy`` and a
        compact profile (a small context window). Cloud profiles never do."""
        return self.config.small_model_strategy and self.profile.compact

    async def _strategy_input(self, task: str, images: tuple[ImageData, ...] | None) -> str:
        """One input through :class:`~codeloop.agent.small_model.strategy.SmallModelTurn`;
        the history keeps the input and codeloop's report (the answer)."""
        from codeloop.agent.small_model.strategy import SmallModelTurn, StrategyConfig

        if images is not None:
            self.history.append(UserTurn(task, images=images))
            self._emit(ev.UserInput, content=task)
        config = StrategyConfig(samples=self.config.small_model_samples)
        self._drafts_left = self.config.max_model_calls_per_input or -1
        outcome = await SmallModelTurn(_StrategyPorts(self), config).run(task)
        turns = self.history.turn_count + self._drafts_made  # before the answer joins the history
        self.last_text = outcome.answer
        self.history.append(AssistantTurn(content=outcome.answer))
        if outcome.reason == "round_limit":
            self._emit(ev.TurnLimit, round=config.steps)
        elif outcome.reason == "turn_limit":
            self._emit(ev.TurnLimit, total_turns=turns)
            if self.budget is not None:
                self._emit_budget("turns")
        return outcome.reason

    async def draft(self, messages: list[Message], *, seed: int | None, temperature: float, grammar: str,
                    max_tokens: int, until: Callable[[str], int | None] | None = None) -> str:
        """One draft of the strategy: ``messages`` under ``grammar`` (llama.cpp's request
        field), with ``seed`` when given, at most ``max_tokens`` (and the profile's limit) long;
        an assistant turn's events, the budget and the retries as for any model call. Streamed,
        but its text is not shown as it comes (most drafts are never written): a
        ``small_model_progress`` warning every :data:`DRAFT_PROGRESS_CHARS` characters says how
        far it is (the terminal's status line). ``until`` reads the text so far at each new line:
        an offset means nothing from there on would be read, and the stream stops (its usage then
        estimated at four characters a token; a budget is charged the call's worst case, as for
        any call cut short). ``DraftsExhausted`` past ``max_model_calls_per_input`` or, each draft
        being a turn, ``max_turns``."""
        from codeloop.agent.small_model.strategy import DraftsExhausted

        if self._drafts_left == 0:
            raise DraftsExhausted("round_limit")
        if self.config.max_turns > 0 and self.history.turn_count + self._drafts_made >= self.config.max_turns:
            raise DraftsExhausted("turn_limit")
        self._drafts_left -= 1
        self._drafts_made += 1
        limit = self.profile.max_output_tokens
        max_tokens = min(max_tokens, limit) if limit else max_tokens
        options = dict(self.profile.provider_options() or {})
        extra: dict[str, Any] = {"grammar": grammar, **({"seed": seed} if seed is not None else {})}
        for name in {self.profile.provider or "openai_compatible", "openai_compatible"}:
            options[name] = {**options.get(name, {}), **extra}
        request = Request(model=self.profile.model, messages=messages, provider=self.profile.provider,
                          provider_options=options, temperature=temperature, max_tokens=max_tokens)
        self._emit(ev.AssistantTextStart)
        emit = self._draft_progress(until)
        try:
            if self.budget is not None:
                response = await self._call_within_budget(request, True, self.budget, conversation=False,
                                                          emit=emit)
            else:
                response = await call_model(self.client, request, stream=True, config=self.config, emit=emit)
            text, reasoning, usage = response.text, response.reasoning, response.usage
        except DraftStopped as stopped:
            text, reasoning = stopped.text, None
            usage = Usage(input_tokens=sum(len(m.text) for m in messages) // CHARS_PER_TOKEN,
                          output_tokens=-(-len(stopped.streamed) // CHARS_PER_TOKEN))
        self.step += 1
        self._emit(ev.AssistantTextEnd, text=text, reasoning=reasoning, tool_call_count=0,
                   input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                   cache_read_tokens=usage.cache_read_tokens or 0)
        return text

    def _draft_progress(self, until: Callable[[str], int | None] | None) -> Emit:
        """The events of a streamed draft, its text deltas turned into progress notes; DraftStopped
        once ``until`` finds where the rest of the text would not be read."""
        parts: list[str] = []
        written = [0]

        def emit(kind: type[ev.SessionEvent], **data: Any) -> None:
            if kind is ev.Retry and data.get("discard_deltas"):
                parts.clear()  # the attempt starts over: what it streamed is not part of the reply
            if kind is not ev.AssistantTextDelta:
                self._emit(kind, **data)
                return
            delta: str = data["delta"]
            parts.append(delta)
            before, written[0] = written[0], written[0] + len(delta)
            if written[0] // DRAFT_PROGRESS_CHARS > before // DRAFT_PROGRESS_CHARS:
                self._emit(ev.WarningEvent, message=f"drafting: {written[0]:,} characters so far",
                           code="small_model_progress")
            if until is not None and "\n" in delta:
                text = "".join(parts)
                if (end := until(text)) is not None:
                    raise DraftStopped(text[:end], text)
        return emit

    async def _guarded_input(self, turn: Turn, guards: list[TurnGuard]) -> str:
        """The input with what the guards put in front of it; their ANSWER step for this input."""
        added = [text for g in guards if type(g).before_input is not TurnGuard.before_input
                 and (text := await g.before_input(turn))]
        answering = [g for g in guards if type(g).before_call is not TurnGuard.before_call]
        self._answer = partial(self._answer_call, answering, turn) if answering else None
        return "\n\n".join([*added, turn.task])

    @staticmethod
    async def _answer_call(guards: list[TurnGuard], turn: Turn, call: ToolCallRequest) -> ToolOutput | None:
        for guard in guards:
            if (answered := await guard.before_call(call, turn)) is not None:
                return answered
        return None

    def _guard_end(self, action: GuardAction, turn: Turn) -> str:
        """How an input a guard ended (or accepted as complete) is reported: its note as a
        warning, the guard's answer as the last text; returns the end reason ("" for none)."""
        if action.note:
            self._emit(ev.WarningEvent, message=action.note, code=action.text)
        if turn.answer is not None:
            self.last_text = turn.answer
        return action.text if action.kind == "end" else ""

    def _request(self) -> Request:
        tools = self._tools().definitions()
        key = (self._registry_key, self.config.user_instructions)
        if self._system_prompt[0] != key:
            self._system_prompt = (key, self.fixed_prompt if self.fixed_prompt is not None else
                                   self.profile.build_system_prompt(self._environment_block, self._project_docs,
                                                                    self.config.user_instructions, tools))
        system = self._system_prompt[1]
        if self._constrained:
            # The schema lists every tool; llama.cpp refuses a grammar together with tools.
            system += "\n\n" + constrained.describe_reply_format(tools)
        return Request(
            model=self.profile.model,
            messages=[Message.system(system), *self.history.messages()],
            provider=self.profile.provider,
            tools=tools if self.profile.native_tool_calls and not self._constrained else None,
            response_format=constrained.response_format(tools) if self._constrained else None,
            reasoning_effort=self.config.reasoning_effort if self.profile.supports_reasoning else None,
            provider_options=self.profile.provider_options(),
            stop_sequences=list(self.profile.stop_sequences) or None,
            temperature=self.profile.temperature,
            max_tokens=self.profile.max_output_tokens,
        )

    async def _call_model(self) -> Response:
        request = self._request()
        stream = self.config.stream and self.profile.supports_streaming
        if self.budget is None:
            self._emit(ev.AssistantTextStart)
            return await call_model(self.client, request, stream=stream, config=self.config, emit=self._emit)
        return await self._call_within_budget(request, stream, self.budget)

    async def _call_within_budget(self, request: Request, stream: bool, budget: Budget, *,
                                  conversation: bool = True, emit: Emit | None = None) -> Response:
        """The call, only when its worst case fits what is left (issue 36): its ``max_tokens``
        lowered to fit, what is left told to the model last (the cached prefix stays the
        same), cancelled when ``max_time`` runs out; BudgetStop when it cannot be made.
        A call outside the conversation (a strategy draft) gets no note and no start event."""
        note = [Message.user(budget.note(self.history.turn_count, self.config.max_turns))] if conversation else []
        request = dataclasses.replace(request, messages=[*request.messages, *note])
        tracker = self._sent if conversation else InputTracker()
        info = get_model_info(request.model)  # without a max_tokens, ask no more than the model can give
        asked = request.max_tokens or (info.max_output if info is not None else None)
        plan = budget.plan(tracker.bound(request, note), asked, self._price)
        if plan.stop is not None:
            raise BudgetStop(plan.stop)
        request = fit_thinking(dataclasses.replace(request, max_tokens=plan.max_tokens))
        if conversation:
            self._emit(ev.AssistantTextStart)
        try:
            response = await asyncio.wait_for(
                call_model(self.client, request, stream=stream, config=self.config, emit=emit or self._emit),
                budget.seconds_left())
        except TimeoutError:
            if (budget.seconds_left() or 0) > 0:
                raise  # not the budget's timeout
            # Cancelled mid-reply: the provider may bill all of it; charge the worst case (it fit).
            budget.charge(Usage(input_tokens=plan.input_bound, output_tokens=plan.max_tokens or 0), None,
                          self._price, input_bound=plan.input_bound, reply_bytes=0)
            raise BudgetStop("time") from None
        except DraftStopped as stopped:
            # Stopped by codeloop mid-reply: no usage came; the worst case again, as for a timeout.
            budget.charge(Usage(input_tokens=plan.input_bound, output_tokens=plan.max_tokens or 0), None,
                          self._price, input_bound=plan.input_bound, reply_bytes=len(stopped.streamed.encode()))
            self._emit_budget(None)
            raise
        provider = request.provider or response.provider
        reply_bytes = len(response.text.encode()) + sum(len(json.dumps(c.arguments)) for c in response.tool_calls)
        budget.charge(response.usage, provider, self._price, input_bound=plan.input_bound, reply_bytes=reply_bytes)
        tracker.counted_as(request, note, prompt_tokens(response.usage, provider))
        self._emit_budget(None)
        return response

    def _emit_budget(self, limit: str | None) -> None:
        assert self.budget is not None
        self._emit(ev.BudgetEvent, limit=limit, used=self.budget.used(self.history.turn_count),
                   limits=self.budget.limits_of(self.config.max_turns))

    def context_use(self) -> dict[str, int]:
        """Estimated tokens (characters / 4, §5.5) of what the next request holds, by part:
        ``system prompt`` (without the project docs), ``project docs`` (AGENTS.md...), ``tools``,
        ``conversation`` (inputs and replies), ``files read`` and ``other tool output``, and the
        ``window``; what ``/context`` shows in a chat (issue 36)."""
        request = self._request()
        read_tools = (READ_FILE, READ_MANY_FILES, RECALL_TOOL)
        outputs = {"files read": 0, "other tool output": 0}
        for turn in self.history.turns:
            if isinstance(turn, ToolResultsTurn):
                for r in turn.results:
                    outputs["files read" if r.tool_name in read_tools else "other tool output"] += len(r.content)
        conversation = self.history.total_chars - sum(outputs.values())
        docs = len(self._project_docs)
        parts = {"system prompt": len(self.system_prompt) - docs, "project docs": docs,
                 "tools": len(json.dumps([dataclasses.asdict(t) for t in request.tools or ()])),
                 "conversation": conversation, **outputs}
        return {**{k: v // CHARS_PER_TOKEN for k, v in parts.items()}, "window": self.profile.context_window_size}

    @property
    def system_prompt(self) -> str:
        """The system prompt of the last request ("" before the first), as guards compare a
        reply with what the model was sent."""
        return self._system_prompt[1]

    @property
    def constrained(self) -> bool:
        """True when replies are constrained to one JSON call or answer (decided at start)."""
        return self._constrained

    @property
    def small_model(self) -> bool:
        """True when the small-model rescues of replies apply (issue 20): the config's
        ``small_model_rescues``, else a small context window (the compact prompt)."""
        rescue = self.config.small_model_rescues
        return self.profile.compact if rescue is None else rescue

    async def _read(self, response: Response) -> Reply:
        recover = self.config.tool_call_recovery
        if recover is None:
            recover = self.profile.tool_call_recovery or not self.profile.native_tool_calls
        key = (self._registry_key, recover, self._constrained, self.small_model)  # _request refreshed the registry
        built, reader = self._reader
        if built != key or reader is None:  # built once per tool set: this runs every round
            schemas = {d.name: d.parameters for d in self._registry.definitions()}
            reader = ReplyReader(schemas, recover, self._constrained, self.profile.native_tool_calls,
                                 self.profile.max_output_tokens, lenient=self.small_model)
            self._reader = (key, reader)
        reply = reader.read(response)
        if not self.small_model:
            return reply
        forms = CallForms(reader.schemas, CallForms.style_of(self._constrained, self.profile.native_tool_calls))
        task = next((t.content for t in reversed(self.history.turns) if isinstance(t, UserTurn)), "")
        return await ReplyRescue(reader.schemas, forms, self.system_prompt, task).rescue(reply, self.environment)

    async def _resolve_constrained(self) -> None:
        """Decide constrained decoding once per session and say which mode is active."""
        mode = self.config.constrained_decoding
        support = None
        if mode == "auto":
            probe_request = Request(model=self.profile.model, messages=[], provider=self.profile.provider)
            support = await constrained.probe_support(
                self.client.complete, self.profile.model, provider=self.profile.provider,
                key=constrained.support_key(self.client, probe_request))
        self._constrained = mode == "on" or (mode == "auto" and support is not None and support.supported)
        if self._constrained and not self.profile.native_tool_calls:
            # The text profile's prompt teaches its tagged syntax and its stop sequences could
            # cut a JSON string; a constrained session gets the native compact prompt instead
            # (same registry object, so tools registered later still count).
            fields = {f.name: getattr(self.profile, f.name) for f in dataclasses.fields(ProviderProfile)}
            self.profile = ProviderProfile(**{**fields, "base_instructions": NATIVE_COMPACT,
                                              "compact_instructions": NATIVE_COMPACT, "stop_sequences": ()})
        if mode != "off":
            self._emit(ev.WarningEvent, message=constrained.mode_statement(mode, support), code="constrained_decoding")

    # -- tools ------------------------------------------------------------------------------

    def _tools(self) -> ToolRegistry:
        """The profile's registry plus this session's subagent tools (rebuilt when it changes)."""
        # recall_output joins once something was compacted: the history changed there anyway,
        # so the prompt cache loses nothing more, and sessions that never compact never see it.
        defs = (*self.profile.tool_registry.definitions(), bool(self.dropped), self.uses_strategy)
        if defs != self._registry_key:
            tools = [t for n in self.profile.tool_registry.names() if (t := self.profile.tool_registry.get(n))]
            if self.uses_strategy and APPLY_PATCH not in self.profile.tool_registry.names():
                # The strategy's DELETE lines remove files through the pipeline's patch tool
                # (its drafts carry no tool definitions, so the model's requests are unchanged).
                tools.append(apply_patch_tool())
            if self.depth < self.config.max_subagent_depth:
                tools += subagent_tools(self.subagents)
            if self.dropped:
                tools.append(recall_tool(self.dropped))
            self._registry = ToolRegistry.of(tools)
            self._registry_key = defs
        return self._registry

    async def _execute_tool_calls(self, calls: list[ToolCall]) -> list[CallResult]:
        if self.profile.supports_parallel_tool_calls and len(calls) > 1:
            return list(await asyncio.gather(*(self._execute_one(c) for c in calls)))
        return [await self._execute_one(c) for c in calls]

    async def _execute_one(self, call: ToolCall) -> CallResult:
        if call.parse_error is not None:  # failed by the reply reader: it never reaches the pipeline
            self._emit(ev.ToolCallStart, tool_name=call.name, call_id=call.id, arguments=call.arguments)
            self._emit(ev.ToolCallEnd, call_id=call.id, tool_name=call.name, error=call.parse_error)
            return CallResult(call.id, call.name, call.parse_error, is_error=True)
        result = await self._pipeline().run(PipelineCall(
            call.name, call.arguments, call.id, self.id if self.config.track_reads else None, self.small_model,
            step=self.step_of.step, answer=self._answer))
        return CallResult(call.id, call.name, result.output, result.is_error)

    def _pipeline(self) -> Pipeline:
        """This session's pipeline, built by the one factory; built again only when a setting
        it holds was replaced (the recorder sets ``checkpoint``, ``codeloop run --resume`` the
        ``id`` its hooks are told)."""
        registry = self._tools()
        cached, pipeline = self._built
        # Asked once per call: identity checks spelled out, no tuple or generator built per call
        # (loop_overhead measures this path; issue 30 keeps it within 5 % of the old direct call).
        if (pipeline is None or cached[0] is not registry or cached[1] is not self.environment
                or cached[2] is not self.policy or cached[3] is not self.approvals
                or cached[4] is not self.checkpoint or cached[5] is not self.hooks or cached[6] != self.id):
            key = (registry, self.environment, self.policy, self.approvals, self.checkpoint, self.hooks, self.id)
            watch = None
            if self.config.diagnostics:
                watch = Diagnostics(self.config.diagnostic_commands, self._diagnostics_warning).watch
            pipeline = build_pipeline(
                registry, self.environment, policy=self.policy, hooks=self.hooks, session=self.step_of.id,
                approvals=self._approvals(),
                session_id=self.id, hook_warning=self._hook_warning, checkpoint=self.checkpoint,
                truncation=self._truncation, events=self._tool_event, watch=watch)
            self._built = (key, pipeline)
        return pipeline

    def _approvals(self) -> Approvals | None:
        """``approvals``, waiting no longer than ``--max-time`` leaves (then withdrawn)."""
        if self.approvals is None or self.budget is None or self.budget.limits.seconds is None:
            return self.approvals
        return dataclasses.replace(self.approvals, time_left=self.budget.seconds_left)

    async def _hook(self, event: str, **payload: Any) -> list[str]:
        """Run the ``event`` hooks (session_start, user_prompt, stop); their texts."""
        assert self.hooks is not None
        return await self.hooks.notify(event, {"session_id": self.id, **payload}, self._hook_warning)

    def _hook_warning(self, message: str) -> None:
        self._emit(ev.WarningEvent, message=message, code="hook")

    def _diagnostics_warning(self, message: str) -> None:
        self._emit(ev.WarningEvent, message=message, code="diagnostics")

    def _tool_event(self, event: ToolEvent) -> None:
        """The pipeline's EVENT step, as this session's typed events."""
        match event:
            case ToolCallStarted():
                self._emit(ev.ToolCallStart, tool_name=event.tool_name, call_id=event.call_id,
                           arguments=dict(event.arguments))
            case ToolCallOutput():
                self._emit(ev.ToolCallOutputDelta, call_id=event.call_id, delta=event.text)
            case ToolCallEnded():
                ended = {"error": event.error} if event.error is not None else {"output": event.output}
                self._emit(ev.ToolCallEnd, call_id=event.call_id, tool_name=event.tool_name,
                           duration_ms=event.duration_ms, **ended)
            case ToolCallPending(entry=entry):
                self._emit(ev.ApprovalPending, call_id=event.call_id, pending_id=entry.id, tool_name=entry.tool,
                           summary=entry.summary(), reason=entry.reason, grants=list(entry.grants),
                           remember_as=list(entry.remember_as))
            case ToolCallDecided(entry=entry):
                self._emit(ev.ApprovalDecided, call_id=event.call_id, pending_id=entry.id, tool_name=entry.tool,
                           status=entry.status, decided_by=entry.decided_by or "", reason=entry.decision_reason,
                           scope=entry.scope)
            case _:
                assert_never(event)

    # -- steering, loops, context (§2.6, §2.10, §5.5) --------------------------------------

    def _drain_steering(self) -> None:
        while self._steering:
            self._inject(self._steering.popleft())

    def _inject(self, message: str, event: str = "steering") -> None:
        """A steering turn: the user's (§2.6), a guard's nudge, or a loop warning (§2.10)."""
        self.history.append(SteeringTurn(message))
        if event == "loop_detection":
            self._emit(ev.LoopDetection, message=message)
        else:
            self._emit(ev.SteeringInjected, content=message)

    def _output_limits(self) -> dict[str, int]:
        """Per-tool character limits: the config's, and for small context windows (issue 10)
        every tool capped at a quarter of the window so one read cannot overflow it."""
        limits = dict(self.config.tool_output_limits)
        cap = self.profile.context_window_size * CHARS_PER_TOKEN // 4
        if cap < max(DEFAULT_TOOL_LIMITS.values()):
            for name in {*DEFAULT_TOOL_LIMITS, *self.profile.tool_registry.names()}:
                limits.setdefault(name, min(DEFAULT_TOOL_LIMITS.get(name, FALLBACK_CHAR_LIMIT), cap))
        return limits

    def _fit_history(self) -> None:
        """Above 70% of the window, shorten the oldest tool outputs (never the input or the
        latest results) down to 50% (issue 10); the model is told in each shortened result how
        to read it back, and a ``context_compacted`` event says what went (issue 36)."""
        window_chars = self.profile.context_window_size * CHARS_PER_TOKEN
        fixed = len(self._system_prompt[1])
        before = self.history.total_chars + fixed
        if before <= window_chars * 0.7:
            return
        dropped = self.history.shorten_oldest_results(max(int(window_chars * 0.5) - fixed, 0),
                                                      note=lambda r: shortened_note(r.tool_name, r.tool_call_id))
        if not dropped:
            return
        for turn, result in dropped:
            self.dropped.keep(Dropped(turn, result.tool_call_id, result.tool_name, result.content))
        self._emit(ev.WarningEvent, message=f"Shortened {len(dropped)} earlier tool outputs to fit the context window",
                   code="history_shortened")
        self._emit(ev.ContextCompacted, tokens_before=before // CHARS_PER_TOKEN,
                   tokens_after=(self.history.total_chars + fixed) // CHARS_PER_TOKEN,
                   dropped=[{"turn": turn, "call_id": r.tool_call_id, "tool_name": r.tool_name, "chars": len(r.content)}
                            for turn, r in dropped])

    def _check_context(self) -> bool:
        """Emit the §5.5 warning once per input when the estimate passes the threshold."""
        window = self.profile.context_window_size
        approx_tokens = (self.history.total_chars + len(self._system_prompt[1])) / CHARS_PER_TOKEN
        if window <= 0 or approx_tokens <= window * self.config.context_warning_ratio:
            return False
        percent = round(approx_tokens / window * 100)
        self._emit(ev.WarningEvent, message=f"Context usage at ~{percent}% of context window",
                   code="context_usage")
        return True

    # -- lifecycle ----------------------------------------------------------------------------

    async def _start(self) -> None:
        if self._started:
            return
        self._started = True
        if self.fixed_prompt is None:
            await self._gather_prompt_context()
        self._emit(ev.SessionStart, profile=self.profile.id, model=self.profile.model,
                   working_directory=self.environment.working_directory())
        if self.hooks:
            await self._hook("session_start")
        await self._resolve_constrained()

    async def _gather_prompt_context(self) -> None:
        ctx = await gather_environment_context(self.environment, self.profile.model, self.profile.knowledge_cutoff)
        self._environment_block = render_environment(ctx)
        if self.working_subdir:
            self._environment_block += (
                f"\nYou are scoped to the subdirectory {self.working_subdir!r}: work only inside it.")
        docs = await discover_project_docs(self.environment, self.profile.id, self.working_subdir)
        self._project_docs = render_project_docs(docs)

    async def _fail(self, exc: Exception) -> None:
        what = next((text for kind, text in (
            (AuthenticationError, "authentication failed (check the API key)"),
            (NotFoundError, f"model {self.profile.model!r} or its endpoint was not found (check the model id and base URL)"),
            (SDKError, "the model provider failed"),
        ) if isinstance(exc, kind)), "internal error")
        self._emit(ev.ErrorEvent, message=f"{what}, closing the session: {exc}",
                   error_type=type(exc).__name__, fatal=True)
        self.end_reason, self.error = "error", exc
        await self._shutdown("error", kill_processes=True)

    async def _shutdown(self, reason: str, *, kill_processes: bool) -> None:
        """Appendix B after the model call was cancelled: SIGTERM the running commands'
        process groups, up to 2 s, SIGKILL what remains (``environment.cleanup``), emit
        SESSION_END (events are delivered synchronously: nothing is pending), then close
        the subagents. The session is CLOSED from SESSION_END on, so nothing restarts it."""
        if self.state == SessionState.CLOSED:
            return
        if kill_processes and self.depth == 0:
            await self.environment.cleanup()
        if self.depth == 0:
            self.withdraw_pending(f"the session ended ({reason})")
        self.end_reason = reason
        self.state = SessionState.CLOSED
        self._emit(ev.SessionEnd, state=self.state.value, reason=reason, final_text=self.last_text)
        await self.subagents.close_all()

    def withdraw_pending(self, why: str) -> None:
        """Withdraw this session's calls still waiting for an answer (each an APPROVAL_DECIDED
        event, status ``withdrawn``): nobody waits for them any more. A store that cannot be
        written is a WARNING event (what stays pending can no longer run: nothing claims it)."""
        if self.approvals is None:
            return
        try:
            withdrawn = self.approvals.store.withdraw(self.id, why)
        except Exception as exc:
            self._emit(ev.WarningEvent, message=f"could not withdraw the pending calls: {exc}", code="approvals")
            return
        for entry in withdrawn:
            self._tool_event(ToolCallDecided(entry.call_id, entry))

    def child(self, profile: ProviderProfile, config: SessionConfig, working_dir: str | None) -> Session:
        """A subagent's session (§7): one level deeper, this one's workspace, client, policy,
        approvals, checkpoint, hooks and budget; its calls are part of this session's turn."""
        child = Session(profile, self.environment, config, self.client, policy=self.policy,
                        approvals=self.approvals, checkpoint=self.checkpoint, hooks=self.hooks,
                        depth=self.depth + 1, working_subdir=working_dir or self.working_subdir,
                        budget=self.budget)
        child.step_of = self.step_of
        return child

    def announce(self, kind: type[Any], **data: Any) -> None:
        """Emit an event from a part wired around the loop (the session recorder's ``checkpoint``)."""
        self._emit(kind, **data)

    def _emit(self, kind: type[Any], **data: Any) -> None:
        event = kind(session_id=self.id, timestamp=time.time(), **data)
        for listener in tuple(self._listeners):
            listener(event)


class _StrategyPorts:
    """What the small-model strategy gets of a Session (its :class:`~codeloop.agent.small_model.
    strategy.Ports`): the model call, the pipeline, steering and the terminal's words."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.ran: list[str] = session.strategy_ran

    @property
    def environment(self) -> ExecutionEnvironment:
        return self.session.environment

    async def draft(self, messages: list[Message], *, seed: int | None, temperature: float, grammar: str,
                    max_tokens: int, until: Callable[[str], int | None] | None = None) -> str:
        return await self.session.draft(messages, seed=seed, temperature=temperature, grammar=grammar,
                                        max_tokens=max_tokens, until=until)

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        s = self.session
        result = await s._pipeline().run(PipelineCall(tool, arguments, f"call_{uuid.uuid4().hex[:12]}",
                                                      step=s.step_of.step))
        return result.output, result.is_error

    def say(self, message: str) -> None:
        self.session.announce(ev.WarningEvent, message=message, code="small_model")

    def steering(self) -> list[str]:
        taken = list(self.session._steering)
        self.session._steering.clear()
        for note in taken:
            self.session.announce(ev.SteeringInjected, content=note)
        return taken

    async def judge(self, before: Mapping[str, str], changes: Mapping[str, str | None],
                    ran: Sequence[str], baseline: Baseline) -> list[CheckResult]:
        from codeloop.agent.small_model.strategy import judge_in_scratch

        s = self.session
        # Where no sandbox runs, checks that run code go through the session's policy and
        # approvals: asked like any command (``judge_in_scratch``).
        return await judge_in_scratch(s.environment, before, changes, ran, baseline, policy=s.policy,
                                      approvals=s._approvals())
