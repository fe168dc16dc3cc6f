"""Budgets that never overshoot (issue 36): cost, tokens and time shared by a session,
its subagents and codali's roles.

Peers check a cap *between* calls, so a run ends one call over. Here the worst case of a
call is checked *before* it is made:

- its input is bounded from above without a tokenizer (none exists offline for the cloud
  models): every byte of text, arguments and tool definitions counts as one token (a token
  of a byte-level BPE covers at least one byte), plus a fixed allowance per message, part,
  tool and image for the markup a provider adds (:func:`input_bound`); once the provider
  has counted a request, the next one is bounded by that count plus the bytes added since,
  when the new request extends the old one (:class:`InputTracker`), whichever is smaller;
- its output is bounded by the ``max_tokens`` the request carries, which providers enforce
  (reasoning tokens included);
- prices are the catalog's list prices (:mod:`codeloop.llm.catalog`), input charged at
  1.25x, the price of an Anthropic cache write, so a cache write can never exceed it.

When the worst case does not fit what is left, the call's ``max_tokens`` is lowered to fit;
when fewer than :data:`MIN_REPLY_TOKENS` would remain, the session stops *before* calling
(:meth:`Budget.plan`). Costs are kept as exact fractions: no rounding can let a call through
that does not fit. ``max_time`` is enforced by cancelling the call in flight; turns are the
session's ``max_turns`` (counted by its history).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from codeloop.llm.catalog import get_model_info
from codeloop.llm.types import Message, Request, Response, StreamEvent, StreamEventType, Usage

LIMITS = ("cost", "tokens", "time", "turns")
"""The limit names a ``budget`` event reports."""

MIN_REPLY_TOKENS = 64
"""A call whose reply could not be this long is not made: its input would be paid for a
reply cut before it says anything useful."""
PER_REQUEST_TOKENS = 64
"""Allowance for the markup around a whole request (start/end tokens, the system block)."""
PER_MESSAGE_TOKENS = 16
"""Allowance per message for its role markers."""
PER_PART_TOKENS = 64
"""Allowance per content part for its type, ids and separators (a call id is ~30 bytes)."""
PER_TOOL_TOKENS = 32
"""Allowance per tool definition beyond its JSON bytes."""
TOOLS_TOKENS = 1024
"""Allowance for the tool-use preamble a provider inserts when tools are sent (Anthropic's
is a few hundred tokens)."""
IMAGE_TOKENS = 6400
"""Upper bound of one image's tokens (Anthropic ~1,600 for its largest size, OpenAI's high
detail ~1,100 per 2048x768; Gemini 258 per tile): generous, as a bound must be."""
CACHE_WRITE_FACTOR = Fraction(5, 4)
"""Input is charged in the worst case at this multiple of its list price (Anthropic's cache
write); reads from the cache are cheaper than list, never dearer."""
CACHE_READ_FACTOR = Fraction(1, 10)
"""What an Anthropic cache read costs relative to the list input price (its usage reports
cache reads apart from ``input_tokens``; other providers include them)."""


class BudgetPriceError(ValueError):
    """A cost limit was asked for a model whose price the catalog does not know."""


class BudgetStop(Exception):
    """A limit leaves no room for the next model call (or cancelled the one in flight)."""

    def __init__(self, limit: str) -> None:
        super().__init__(f"the {limit} limit leaves no room for the next model call")
        self.limit = limit


@dataclass(frozen=True)
class BudgetLimits:
    """The limits of a run; None = no limit. Turns are ``SessionConfig.max_turns``."""

    cost_usd: float | None = None
    """US dollars at list price (``--max-cost``)."""
    tokens: int | None = None
    """Input plus output tokens of every model call (``--max-tokens``)."""
    seconds: float | None = None
    """Time spent processing inputs (``--max-time``); a model call in flight is cancelled."""

    def __post_init__(self) -> None:
        for name in ("cost_usd", "tokens", "seconds"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value < 0):
                raise ValueError(f"budget {name} must be a finite number >= 0, not {value!r}")

    @property
    def any(self) -> bool:
        """True when a limit is set."""
        return self.cost_usd is not None or self.tokens is not None or self.seconds is not None


@dataclass(frozen=True)
class Price:
    """List prices of one model in USD per million tokens."""

    input: Fraction
    output: Fraction

    def worst(self, input_tokens: int, output_tokens: int) -> Fraction:
        """The most a call with these bounds can cost."""
        return (self.input * CACHE_WRITE_FACTOR * input_tokens + self.output * output_tokens) / 1_000_000


def price_of(model: str) -> Price | None:
    """The catalog's prices of ``model`` (id or alias); None when it has none."""
    info = get_model_info(model)
    if info is None or info.input_cost_per_million is None or info.output_cost_per_million is None:
        return None
    return Price(Fraction(str(info.input_cost_per_million)), Fraction(str(info.output_cost_per_million)))


def require_price(model: str) -> Price:
    """``model``'s prices, or BudgetPriceError saying what to do."""
    price = price_of(model)
    if price is None:
        raise BudgetPriceError(
            f"--max-cost needs the model's price, and the catalog has none for {model!r}: "
            "limit tokens with --max-tokens instead, or choose a model with a known price "
            "(codeloop models lists them)")
    return price


def prompt_tokens(usage: Usage, provider: str | None) -> int:
    """All prompt tokens of a call: Anthropic reports cache reads and writes apart from
    ``input_tokens``, the other providers include them."""
    if provider == "anthropic":
        return usage.input_tokens + (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
    return usage.input_tokens


def charge_of(usage: Usage, provider: str | None, price: Price | None) -> Fraction:
    """What a call cost at list price: Anthropic's cache writes at 1.25x and reads at 0.1x of
    the input price; elsewhere every prompt token at list (cached ones are cheaper: an
    overestimate, never an under-)."""
    if price is None:
        return Fraction(0)
    cost = price.input * usage.input_tokens + price.output * usage.output_tokens
    if provider == "anthropic":
        cost += price.input * (CACHE_WRITE_FACTOR * (usage.cache_write_tokens or 0)
                               + CACHE_READ_FACTOR * (usage.cache_read_tokens or 0))
    return cost / 1_000_000


def _bytes(text: str | None) -> int:
    return len(text.encode("utf-8", "surrogatepass")) if text else 0


def message_bound(message: Message) -> int:
    """Upper bound of one message's tokens (see the module docstring)."""
    total = PER_MESSAGE_TOKENS + _bytes(message.name)
    for part in message.content:
        total += PER_PART_TOKENS + _bytes(part.text)
        if part.image is not None:
            total += IMAGE_TOKENS
        if part.tool_call is not None:
            call = part.tool_call
            args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            total += _bytes(call.name) + _bytes(args) + _bytes(call.signature)
        if part.tool_result is not None:
            result = part.tool_result
            content = result.content if isinstance(result.content, str) else json.dumps(result.content)
            total += _bytes(content) + (IMAGE_TOKENS if result.image_data else 0)
        if part.thinking is not None:
            total += _bytes(part.thinking.text) + _bytes(part.thinking.signature)
        if part.document is not None or part.audio is not None:
            media = part.document or part.audio
            assert media is not None
            total += len(media.data or b"") + _bytes(media.url)
    return total


def tools_bound(request: Request) -> int:
    """Upper bound of the tokens of the request's tool definitions and response format."""
    total = 0
    if request.tools:
        total += TOOLS_TOKENS + sum(PER_TOOL_TOKENS + _bytes(t.name) + _bytes(t.description)
                                    + _bytes(json.dumps(t.parameters)) for t in request.tools)
    if request.response_format is not None and request.response_format.json_schema:
        total += PER_PART_TOKENS + _bytes(json.dumps(request.response_format.json_schema))
    return total


def input_bound(request: Request) -> int:
    """Upper bound of the request's input tokens, from its bytes alone."""
    return PER_REQUEST_TOKENS + tools_bound(request) + sum(message_bound(m) for m in request.messages)


@dataclass
class InputTracker:
    """Bounds the input of the next request of a conversation, in time proportional to what
    was added (a 500-round session must not re-measure its whole history every call): the
    bound from bytes of the messages sent last time is kept, and when the provider counted
    that request, its count plus the bound of what was added is the tighter bound, as long
    as the new request extends the old one (same system, tools and earlier messages)."""

    messages: list[Message] = field(default_factory=list)
    """The messages of the last request (history shares its objects, so most compare by
    identity; the system message is rebuilt each time and compares by value)."""
    fixed: int = 0
    """The bound of what precedes the messages (tools) then."""
    kept_bytes: int = 0
    """The bound from bytes of ``messages``."""
    counted: int | None = None
    """The provider's prompt tokens for the last request; None without a count."""
    _pending: tuple[list[Message], int, int] | None = None

    def bound(self, request: Request, extra: list[Message]) -> int:
        """Upper bound of ``request``'s input; ``extra`` are messages of the request that
        are not kept (the budget note, at the end)."""
        kept = request.messages[:len(request.messages) - len(extra)]
        old, fixed = self.messages, tools_bound(request)
        extends = (bool(old) and len(kept) >= len(old) and fixed == self.fixed
                   and not any(a is not b and a != b for a, b in zip(old, kept, strict=False)))
        if extends:
            kept_bytes = self.kept_bytes + sum(message_bound(m) for m in kept[len(old):])
        else:
            kept_bytes = sum(message_bound(m) for m in kept)
        self._pending = (kept, fixed, kept_bytes)
        extra_bytes = sum(message_bound(m) for m in extra)
        by_bytes = PER_REQUEST_TOKENS + fixed + kept_bytes + extra_bytes
        if not extends or self.counted is None:
            return by_bytes
        return min(by_bytes, self.counted + (kept_bytes - self.kept_bytes) + extra_bytes)

    def counted_as(self, request: Request, extra: list[Message], tokens: int) -> None:
        """Remember the request :meth:`bound` measured last (without ``extra``) and the
        provider's count of it (with ``extra``: a count can only over-state the rest)."""
        kept = request.messages[:len(request.messages) - len(extra)]
        if self._pending is None or self._pending[0] != kept:
            self._pending = (kept, tools_bound(request), sum(message_bound(m) for m in kept))
        self.messages, self.fixed, self.kept_bytes = self._pending
        self._pending = None
        self.counted = tokens if tokens > 0 else None


@dataclass(frozen=True)
class CallPlan:
    """What :meth:`Budget.plan` decided for one call."""

    max_tokens: int | None
    """The ``max_tokens`` to send (None: leave the request's)."""
    stop: str | None = None
    """The limit that stops before the call (``cost``, ``tokens``, ``time``), or None."""
    input_bound: int = 0
    """The input tokens the check assumed."""


@dataclass
class Spent:
    """What a budget has used."""

    cost: Fraction = Fraction(0)
    """US dollars at list price, exact."""
    tokens: int = 0
    seconds: float = 0.0


class Budget:
    """The limits of a run and what was spent, shared by a session, its subagents and
    codali's roles (one object: a child's spending is the parent's)."""

    def __init__(self, limits: BudgetLimits, spent: Spent | None = None) -> None:
        self.limits = limits
        """May be replaced (a higher limit) between inputs: ``Session.go_on`` then continues."""
        self.spent = spent or Spent()
        self._running = 0
        self._since = 0.0

    @property
    def _cost_limit(self) -> Fraction | None:
        return Fraction(str(self.limits.cost_usd)) if self.limits.cost_usd is not None else None

    # -- time --------------------------------------------------------------------------------

    def start_clock(self) -> None:
        """A session starts processing (nested: the clock runs while any does)."""
        if self._running == 0:
            self._since = time.monotonic()
        self._running += 1

    def stop_clock(self) -> None:
        """A session stops processing."""
        self._running -= 1
        if self._running == 0:
            self.spent.seconds += time.monotonic() - self._since

    def seconds_used(self) -> float:
        """Seconds spent processing, the running stretch included."""
        running = time.monotonic() - self._since if self._running else 0.0
        return self.spent.seconds + running

    def seconds_left(self) -> float | None:
        """Seconds left before ``--max-time``; None without a time limit."""
        if self.limits.seconds is None:
            return None
        return max(self.limits.seconds - self.seconds_used(), 0.0)

    # -- the check before a call -------------------------------------------------------------

    def plan(self, input_tokens: int, max_tokens: int | None, price: Price | None) -> CallPlan:
        """Fit a call whose input is at most ``input_tokens`` and whose reply is asked at
        most ``max_tokens`` (None: the provider's default) into what is left: lower its
        ``max_tokens`` to fit, or name the limit that stops it."""
        left = self.seconds_left()
        if left is not None and left <= 0:
            return CallPlan(max_tokens, "time", input_tokens)
        fits: list[tuple[int, str]] = []
        if self.limits.tokens is not None:
            fits.append((self.limits.tokens - self.spent.tokens - input_tokens, "tokens"))
        if self._cost_limit is not None:
            if price is None:
                raise BudgetPriceError("a cost limit needs the model's price (require_price checks it first)")
            room = self._cost_limit - self.spent.cost - price.worst(input_tokens, 0)
            if price.output > 0:
                fits.append((math.floor(room * 1_000_000 / price.output), "cost"))
            elif room < 0:  # a free reply, but the input alone does not fit
                fits.append((-1, "cost"))
        if not fits:
            return CallPlan(max_tokens, None, input_tokens)
        most, limit = min(fits)
        if most < min(MIN_REPLY_TOKENS, max_tokens or MIN_REPLY_TOKENS):
            return CallPlan(max_tokens, limit, input_tokens)
        return CallPlan(most if max_tokens is None else min(max_tokens, most), None, input_tokens)

    def charge(self, usage: Usage, provider: str | None, price: Price | None, *, input_bound: int,
               reply_bytes: int) -> None:
        """Count a finished call. A provider that reports no usage is charged the input
        bound and a token per byte of the reply (upper bounds, as the check assumed)."""
        if usage.input_tokens == 0 and usage.output_tokens == 0:
            usage = Usage(input_tokens=input_bound, output_tokens=reply_bytes)
        self.spent.tokens += prompt_tokens(usage, provider) + usage.output_tokens
        self.spent.cost += charge_of(usage, provider, price)

    # -- what the model and the host see -----------------------------------------------------

    def used(self, turns: int) -> dict[str, Any]:
        """What was used, for a ``budget`` event."""
        return {"cost_usd": float(self.spent.cost), "tokens": self.spent.tokens,
                "seconds": round(self.seconds_used(), 3), "turns": turns}

    def limits_of(self, max_turns: int) -> dict[str, Any]:
        """The limits set, for a ``budget`` event (None: no limit)."""
        return {"cost_usd": self.limits.cost_usd, "tokens": self.limits.tokens, "seconds": self.limits.seconds,
                "turns": max_turns or None}

    def note(self, turns: int, max_turns: int) -> str:
        """What is left, as the model reads it at the end of each request."""
        parts = []
        if self._cost_limit is not None:
            parts.append(f"${float(max(self._cost_limit - self.spent.cost, Fraction(0))):.4f} of "
                         f"${self.limits.cost_usd:g}")
        if self.limits.tokens is not None:
            parts.append(f"{max(self.limits.tokens - self.spent.tokens, 0):,} of {self.limits.tokens:,} tokens")
        left = self.seconds_left()
        if left is not None:
            parts.append(f"{format_duration(left)} of {format_duration(self.limits.seconds or 0)}")
        if max_turns:
            parts.append(f"{max(max_turns - turns, 0)} of {max_turns} turns")
        return ("[budget] Left: " + ", ".join(parts) + ". When it runs out you are stopped: "
                "finish the most important part first.")


def restored_cost(cost_usd: float) -> Fraction:
    """A logged cost as an exact amount never below the one spent (the float may round down)."""
    return Fraction(math.ceil(Fraction(repr(float(cost_usd))) * 10**9) + 1, 10**9)


def format_duration(seconds: float) -> str:
    """``1h02m``, ``4m10s``, ``12s``."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class ModelClient(Protocol):
    """What a budgeted call needs of :class:`codeloop.llm.client.Client`."""

    async def complete(self, request: Request) -> Response: ...

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]: ...


class BudgetedClient:
    """A client whose every call is checked against ``budget`` first and charged after (codali's
    roles, whose calls do not pass a Session): its ``max_tokens`` lowered to fit, BudgetStop
    when it cannot be made or ``max_time`` ran out during it. The caller runs the clock
    (:meth:`Budget.start_clock`)."""

    def __init__(self, client: ModelClient, budget: Budget) -> None:
        self.client, self.budget = client, budget

    def _fit(self, request: Request) -> tuple[Request, CallPlan, Price | None]:
        price = require_price(request.model) if self.budget.limits.cost_usd is not None else price_of(request.model)
        info = get_model_info(request.model)
        asked = request.max_tokens or (info.max_output if info is not None else None)
        plan = self.budget.plan(input_bound(request), asked, price)
        if plan.stop is not None:
            raise BudgetStop(plan.stop)
        return dataclasses.replace(request, max_tokens=plan.max_tokens), plan, price

    def _charge(self, request: Request, response: Response, plan: CallPlan, price: Price | None) -> None:
        reply_bytes = len(response.text.encode()) + sum(len(json.dumps(c.arguments)) for c in response.tool_calls)
        self.budget.charge(response.usage, request.provider or response.provider, price,
                           input_bound=plan.input_bound, reply_bytes=reply_bytes)

    async def complete(self, request: Request) -> Response:
        request, plan, price = self._fit(request)
        try:
            response = await asyncio.wait_for(self.client.complete(request), self.budget.seconds_left())
        except TimeoutError:
            if (self.budget.seconds_left() or 0) > 0:
                raise
            self.budget.charge(Usage(input_tokens=plan.input_bound, output_tokens=plan.max_tokens or 0), None,
                               price, input_bound=plan.input_bound, reply_bytes=0)
            raise BudgetStop("time") from None
        self._charge(request, response, plan, price)
        return response

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        request, plan, price = self._fit(request)
        async for event in self.client.stream(request):
            if event.type == StreamEventType.FINISH and event.response is not None:
                self._charge(request, event.response, plan, price)
            yield event
