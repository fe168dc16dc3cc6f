"""High-level generation: generate() and stream() with the tool loop (unified-llm spec §4.3–4.4, §4.7, §5.6).

Both take either ``prompt`` or ``messages`` (not both), plus ``system``. Each LLM call is
retried per ``RetryPolicy(max_retries=...)`` (a stream only before its first event);
tool calls of one response run concurrently with results in call order; the loop makes
at most ``max_tool_rounds + 1`` LLM calls and stops early when the model answers without
tool calls, when ``stop_when(steps)`` is true, or when a called tool is passive (no
handler: the calls are returned to the caller). ``timeout`` bounds the whole operation
(a number, or ``TimeoutConfig.total``) and each LLM call (``TimeoutConfig.per_step``);
expiry raises RequestTimeoutError. ``abort_signal`` raises AbortError at the next await.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import Any, TypedDict, TypeVar, Unpack

from codeloop.llm.abort import AbortSignal, abortable
from codeloop.llm.accumulator import StreamAccumulator
from codeloop.llm.client import Client, get_default_client
from codeloop.llm.errors import ConfigurationError, RequestTimeoutError
from codeloop.llm.retry import RetryPolicy, retry, retry_stream
from codeloop.llm.tool import RepairToolCall, Tool, execute_tool_calls
from codeloop.llm.types import (
    FinishReason,
    Message,
    Request,
    Response,
    ResponseFormat,
    StreamEvent,
    StreamEventType,
    ToolCall,
    ToolChoice,
    ToolResult,
    Usage,
    Warning,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TimeoutConfig:
    """Time limits of a high-level call (§4.7)."""

    total: float | None = None
    """Seconds for the whole multi-step operation."""
    per_step: float | None = None
    """Seconds for each LLM call."""


@dataclass(frozen=True, slots=True)
class StepResult:
    """One LLM call of the tool loop and the tools it ran (§4.3)."""

    text: str
    """Text of this step's response."""
    reasoning: str | None
    """Reasoning text of this step's response."""
    tool_calls: list[ToolCall]
    """Tool calls the model made."""
    tool_results: list[ToolResult]
    """Results of the calls that were executed, in call order (empty when none ran)."""
    finish_reason: FinishReason
    """Why this step's generation stopped."""
    usage: Usage
    """Tokens of this step."""
    response: Response
    """This step's full response."""
    warnings: list[Warning] = field(default_factory=list)
    """Non-fatal issues of this step."""


@dataclass(frozen=True, slots=True)
class GenerateResult(StepResult):
    """Everything a generate() call produced (§4.3): the final step's fields, plus these."""

    total_usage: Usage = field(default_factory=Usage)
    """Usage summed over all steps."""
    steps: list[StepResult] = field(default_factory=list)
    """Every step, in order."""
    output: Any = None
    """Parsed structured output (generate_object)."""


StopCondition = Callable[[list[StepResult]], bool]


@dataclass(frozen=True, slots=True)
class _Options:
    """Everything generate()/stream() need besides the conversation."""

    client: Client
    base: Request
    tools: tuple[Tool, ...]
    max_tool_rounds: int
    stop_when: StopCondition | None
    policy: RetryPolicy
    per_step: float | None
    deadline: float | None
    abort_signal: AbortSignal | None
    repair_tool_call: RepairToolCall | None


def _messages(prompt: str | None, messages: Sequence[Message] | None, system: str | None) -> list[Message]:
    if prompt is not None and messages is not None:
        raise ConfigurationError("pass either prompt or messages, not both")
    if prompt is None and messages is None:
        raise ConfigurationError("pass prompt (a string) or messages (a conversation)")
    conversation = [Message.user(prompt)] if prompt is not None else list(messages or [])
    return ([Message.system(system)] if system is not None else []) + conversation


_REQUEST_OPTIONS = frozenset({
    "tool_choice", "response_format", "temperature", "top_p", "max_tokens", "stop_sequences",
    "reasoning_effort", "provider", "provider_options",
})
"""The GenerateOptions that go into each Request unchanged."""


def _options(model: str, prompt: str | None, options: GenerateOptions) -> _Options:
    unknown = sorted(set(options) - GenerateOptions.__optional_keys__)
    if unknown:
        raise TypeError(f"got an unexpected keyword argument {unknown[0]!r}")
    max_tool_rounds = options.get("max_tool_rounds", 1)
    if max_tool_rounds < 0:
        raise ConfigurationError(f"max_tool_rounds must be 0 or more, got {max_tool_rounds}")
    timeout = options.get("timeout")
    config = timeout if isinstance(timeout, TimeoutConfig) else TimeoutConfig(total=timeout)
    tools = options.get("tools")
    passed: dict[str, Any] = {k: v for k, v in options.items() if k in _REQUEST_OPTIONS}
    base = Request(
        model=model, messages=_messages(prompt, options.get("messages"), options.get("system")),
        tools=[t.definition for t in tools] if tools else None, **passed,
    )
    return _Options(
        client=options.get("client") or get_default_client(), base=base, tools=tuple(tools or ()),
        max_tool_rounds=max_tool_rounds, stop_when=options.get("stop_when"),
        policy=options.get("retry_policy") or RetryPolicy(max_retries=options.get("max_retries", 2)),
        per_step=config.per_step, deadline=None if config.total is None else time.monotonic() + config.total,
        abort_signal=options.get("abort_signal"), repair_tool_call=options.get("repair_tool_call"),
    )


def _time_left(opts: _Options) -> float | None:
    limits = [x for x in (opts.per_step, None if opts.deadline is None else opts.deadline - time.monotonic())
              if x is not None]
    return min(limits) if limits else None


async def _bounded(awaitable: Awaitable[T], opts: _Options, what: str) -> T:
    """Await with the step/total time limit and the abort signal."""
    left = _time_left(opts)
    try:
        async with asyncio.timeout(left):
            return await abortable(awaitable, opts.abort_signal)
    except TimeoutError as exc:
        raise RequestTimeoutError(f"{what} did not finish within {left:.3g} s", cause=exc) from exc


def _wants_tools(response: Response, opts: _Options) -> bool:
    """The model asked for tools and every requested tool can run here."""
    calls = response.tool_calls
    if not calls or response.finish_reason.reason != FinishReason.TOOL_CALLS:
        return False
    active = {t.name for t in opts.tools if t.execute is not None}
    passive = {t.name for t in opts.tools if t.execute is None}
    return bool(active) and not any(c.name in passive for c in calls)


def _step(response: Response, results: list[ToolResult]) -> StepResult:
    return StepResult(
        text=response.text, reasoning=response.reasoning, tool_calls=response.tool_calls,
        tool_results=results, finish_reason=response.finish_reason, usage=response.usage,
        response=response, warnings=list(response.warnings),
    )


def _result(steps: list[StepResult]) -> GenerateResult:
    final_step = {f.name: getattr(steps[-1], f.name) for f in fields(StepResult)}
    return GenerateResult(**final_step, total_usage=sum((s.usage for s in steps), Usage()), steps=steps)


async def _run_tools(response: Response, conversation: list[Message], opts: _Options) -> list[ToolResult]:
    return await _bounded(
        execute_tool_calls(
            opts.tools, response.tool_calls, messages=conversation, abort_signal=opts.abort_signal,
            repair_tool_call=opts.repair_tool_call,
        ),
        replace(opts, per_step=None),
        "tool execution",
    )


async def _advance(
    opts: _Options, round_num: int, conversation: list[Message], steps: list[StepResult], response: Response
) -> bool:
    """Run the tools ``response`` asks for and record the step; True when another round follows
    (the response and the tool results then end ``conversation``)."""
    run = _wants_tools(response, opts) and round_num < opts.max_tool_rounds
    results = await _run_tools(response, conversation, opts) if run else []
    steps.append(_step(response, results))
    if not run or (opts.stop_when is not None and opts.stop_when(steps)):
        return False
    names = {c.id: c.name for c in response.tool_calls}
    conversation.append(response.message)
    for r in results:
        conversation.append(Message.tool_result(r.tool_call_id, r.content, r.is_error, name=names.get(r.tool_call_id)))
    return True


async def _loop(opts: _Options) -> GenerateResult:
    conversation = list(opts.base.messages)
    steps: list[StepResult] = []
    for round_num in range(opts.max_tool_rounds + 1):
        request = replace(opts.base, messages=list(conversation))
        response = await _bounded(retry(partial(opts.client.complete, request), opts.policy), opts, "LLM call")
        if not await _advance(opts, round_num, conversation, steps, response):
            break
    return _result(steps)


class GenerateOptions(TypedDict, total=False):
    """Keyword arguments of generate(), stream(), generate_object() and stream_object() (§4.3)."""

    messages: Sequence[Message] | None
    """Full conversation (instead of ``prompt``)."""
    system: str | None
    """System message, prepended."""
    tools: Sequence[Tool] | None
    """Tools; those with ``execute`` run automatically."""
    tool_choice: ToolChoice | None
    """auto/none/required/named."""
    max_tool_rounds: int
    """Tool execution rounds (default 1); at most ``max_tool_rounds + 1`` LLM calls."""
    stop_when: StopCondition | None
    """Custom stop condition over the steps so far."""
    response_format: ResponseFormat | None
    """Text, JSON or JSON Schema output."""
    temperature: float | None
    """Sampling temperature."""
    top_p: float | None
    """Nucleus sampling."""
    max_tokens: int | None
    """Output token cap per call."""
    stop_sequences: list[str] | None
    """Strings that end generation."""
    reasoning_effort: str | None
    """low/medium/high."""
    provider: str | None
    """Adapter to route to (client default otherwise)."""
    provider_options: dict[str, Any] | None
    """Provider-specific escape hatch."""
    max_retries: int
    """Retries per LLM call for transient errors (default 2; 0 disables)."""
    retry_policy: RetryPolicy | None
    """Full retry policy; overrides ``max_retries``."""
    timeout: float | TimeoutConfig | None
    """Total seconds, or a TimeoutConfig with ``total`` and ``per_step``."""
    abort_signal: AbortSignal | None
    """Cancellation signal."""
    client: Client | None
    """Client to use instead of the module default."""
    repair_tool_call: RepairToolCall | None
    """Fixes arguments that fail validation (§5.8)."""


async def generate(model: str, prompt: str | None = None, **options: Unpack[GenerateOptions]) -> GenerateResult:
    """Generate a reply, running active tools in a loop (§4.3, §5.6)."""
    return await _loop(_options(model, prompt, options))


class StreamResult:
    """Async iterator over the events of every step, then ``response()`` (§4.4).

    Between steps it yields a STEP_FINISH event carrying the step's response. Iterate it
    to the end (or ``aclose()`` it) so the connection is released.
    """

    def __init__(self, opts: _Options) -> None:
        self._opts = opts
        self._steps: list[StepResult] = []
        self._acc: StreamAccumulator | None = None
        self._final: Response | None = None
        self._events = self._run()

    def __aiter__(self) -> AsyncGenerator[StreamEvent, None]:
        return self._events

    async def aclose(self) -> None:
        await self._events.aclose()

    @property
    def steps(self) -> list[StepResult]:
        """Steps completed so far."""
        return list(self._steps)

    @property
    def partial_response(self) -> Response | None:
        """The current step's response as accumulated so far."""
        if self._final is not None:
            return self._final
        return self._acc.response() if self._acc is not None else None

    def response(self) -> Response:
        """The final response; ConfigurationError when the stream has not ended yet."""
        if self._final is None:
            raise ConfigurationError("the stream has not finished: iterate it to the end before response()")
        return self._final

    def result(self) -> GenerateResult:
        """All steps as a GenerateResult (after the stream ended)."""
        self.response()
        return _result(self._steps)

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """Only the text deltas."""

        async def texts() -> AsyncIterator[str]:
            async for event in self:
                if event.type == StreamEventType.TEXT_DELTA and event.delta:
                    yield event.delta

        return texts()

    async def _step_events(self, request: Request) -> AsyncGenerator[StreamEvent, None]:
        opts = self._opts
        if opts.per_step is not None:  # per_step bounds the whole step, not each event
            step_end = time.monotonic() + opts.per_step
            opts = replace(opts, per_step=None, deadline=min(step_end, opts.deadline or step_end))
        stream = retry_stream(partial(opts.client.stream, request), opts.policy)
        try:
            while True:
                try:
                    event = await _bounded(anext(stream), opts, "LLM stream")
                except StopAsyncIteration:
                    return
                yield event
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()

    async def _run(self) -> AsyncGenerator[StreamEvent, None]:
        opts = self._opts
        conversation = list(opts.base.messages)
        for round_num in range(opts.max_tool_rounds + 1):
            request = replace(opts.base, messages=list(conversation))
            self._acc = StreamAccumulator(provider=request.provider or "", model=request.model)
            async for event in self._step_events(request):
                self._acc.process(event)
                yield event
            response = self._acc.response()
            if not await _advance(opts, round_num, conversation, self._steps, response):
                self._final = response
                return
            yield StreamEvent.finish(response, StreamEventType.STEP_FINISH)
        self._final = self._steps[-1].response  # pragma: no cover - the loop always returns


def stream(model: str, prompt: str | None = None, **options: Unpack[GenerateOptions]) -> StreamResult:
    """Stream a reply, running active tools between steps (§4.4, §5.9)."""
    return StreamResult(_options(model, prompt, options))


def generate_sync(model: str, prompt: str | None = None, **options: Unpack[GenerateOptions]) -> GenerateResult:
    """Blocking wrapper of :func:`generate` for scripts (not inside a running event loop)."""
    return asyncio.run(generate(model, prompt, **options))
