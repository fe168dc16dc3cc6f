"""The tool execution pipeline (loop spec §3.8, §5): one function per step.

``execute_tool_call`` runs EVENT → LOOKUP → VALIDATE → POLICY → ANSWER → WATCH → CHECKPOINT →
EXECUTE → AFTER → TRUNCATE → EVENT and returns a :class:`ToolCallOutcome`. It never raises
for anything a model or a tool can cause: unknown tools, malformed arguments, denied calls
and every exception of an executor become ``is_error=True`` outcomes whose text says what
went wrong.
(Task cancellation still propagates: it is the caller's decision, not the model's.) EVENT,
ANSWER, WATCH, CHECKPOINT and AFTER are optional steps of the caller (the agent's events, its
"already done" answers to repeated calls, diagnostics after edits,
:mod:`codeloop.tools.diagnostics`, file snapshots and ``post_tool_call`` hooks,
:mod:`codeloop.tools.hooks`).

"Needs approval" is a pending call, not a prompt (STYLE §9, issue 34): when the policy asks,
the call is added to the face's :class:`~codeloop.policy.pending.PendingStore` (:class:`Approvals`)
and announced (:class:`~codeloop.tools.tool_events.ToolCallPending`). A face that waits
(``codeloop run``) awaits the store's answer, given by its own client (the terminal prompt) or
by anyone else; a face that does not (the relay, spaces) gets ``result.pending`` and later
calls :func:`resume_pending`. Either way the call runs only after its one ``claim`` succeeded
(approved → running), so it runs once whatever races; ``finish`` marks it ran.

A pipeline built without a store (``approvals=None``) does not run an ask: its outcome says the
call needs approval, and ``result.pending`` holds what would have run (stored nowhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.policy.approval import Effect, ToolCallRequest, ToolPolicy, allow_all
from codeloop.policy.model import Decision
from codeloop.policy.pending import DEFAULT_POLL_INTERVAL, PendingCall, PendingStore
from codeloop.tools.arguments import ArgumentError, parse_arguments, validate_arguments
from codeloop.tools.errors import ToolError
from codeloop.tools.registry import RegisteredTool, ToolCallOutcome, ToolContext, ToolOutput, ToolRegistry
from codeloop.tools.suggestions import equivalent_call
from codeloop.tools.tool_events import (
    ToolCallDecided,
    ToolCallEnded,
    ToolCallPending,
    ToolCallStarted,
    ToolEventSink,
)
from codeloop.tools.truncation import TruncationConfig, truncate_tool_output


class Checkpoint(Protocol):
    """CHECKPOINT, the seam every change passes: ``before`` right before EXECUTE and ``after``
    right after it (also when the tool failed or was cancelled), for each call that passed
    POLICY and whose tool declares ``write`` or ``exec`` (``codeloop.tools.effects``). ``step``
    is the face's unit of work (``ToolContext.step``: a turn of the agent). ``effects`` and
    ``paths`` are the call's declaration (``paths`` None: the call may touch any file, so no
    file snapshot covers it). What ``before`` raises becomes the call's error (it does not run).

    A checkpoint with a true ``runs_in_thread`` attribute is called in a worker thread (its
    ``before`` and ``after`` block on git: run on the event loop they would stall every other
    request of a server); it must then not touch the loop."""

    def before(self, call: ToolCallRequest, effects: frozenset[Effect], paths: tuple[str, ...] | None,
               step: int | str | None) -> None: ...

    def after(self, call: ToolCallRequest, effects: frozenset[Effect], paths: tuple[str, ...] | None,
              step: int | str | None, outcome: ToolOutput) -> None: ...

Answer = Callable[[ToolCallRequest], Awaitable[ToolOutput | None]]
"""ANSWER: asked about each call that passed POLICY; an output is the call's result instead of
running it (CHECKPOINT, EXECUTE and AFTER are skipped), None runs it; must not raise."""

AfterCall = Callable[[ToolCallRequest, ToolOutput], Awaitable[ToolOutput]]
"""AFTER: gets each call that ran and what it produced, returns the output to keep (the
``post_tool_call`` hooks append to it); must not raise."""

Watch = Callable[[ToolCallRequest, ExecutionEnvironment], Awaitable[AfterCall | None]]
"""WATCH: called for each call that passed POLICY, right before CHECKPOINT and EXECUTE; returns
an AFTER step for this call alone (run before ``after``), or None. For what needs the workspace
as it was before the call: the diagnostics after edits read the files an edit names
(:class:`codeloop.tools.diagnostics.Diagnostics`). Must not raise."""


AskClient = Callable[[PendingCall, PendingStore], Awaitable[None]]
"""A client of the store told at once of each new pending call, while the pipeline waits for
its answer (``codeloop run``'s terminal prompt): it answers through ``store.decide`` like any
other surface. It is cancelled when the answer came from elsewhere first. Must not raise."""

Remember = Callable[[PendingCall], None]
"""Stores what an "always" answer grants (``entry.remember_as``: ``approvals.toml``'s prefixes).
Must not raise."""


@dataclass(frozen=True)
class Approvals:
    """How a pipeline's asks are answered: through ``store``, the one record of what waits."""

    store: PendingStore
    """Where each ask is added and answered."""
    session: str = ""
    """The session the entries belong to (what ``withdraw`` takes back when it ends); an agent's
    ``Session`` sets its own id."""
    face: str = "tool"
    """Which face raised them (``PendingCall.face``)."""
    wait: bool = False
    """True: the call waits for the answer and then runs or fails (``codeloop run``); False: the
    outcome carries the entry (``result.pending``) and :func:`resume_pending` finishes it."""
    client: AskClient | None = None
    """Told of each new entry while the pipeline waits (the terminal prompt)."""
    remember: Remember | None = None
    """Stores an "always" answer."""
    poll_interval: float = DEFAULT_POLL_INTERVAL
    """Seconds between two reads of the store while waiting."""
    time_left: Callable[[], float | None] | None = None
    """Seconds the session may still work (``--max-time``; None: no limit): a wait longer than
    that times out, and the session's waiting calls are withdrawn."""


class _CallFailed(Exception):
    """Internal: a step ended the call with an error text for the model."""

    def __init__(self, message: str, pending: PendingCall | None = None, decision: Decision | None = None) -> None:
        super().__init__(message)
        self.pending = pending
        self.decision = decision


async def execute_tool_call(
    registry: ToolRegistry,
    name: str,
    arguments: Mapping[str, Any] | str | None,
    env: ExecutionEnvironment,
    *,
    policy: ToolPolicy | None = None,
    config: TruncationConfig | None = None,
    ctx: ToolContext | None = None,
    on_event: ToolEventSink | None = None,
    checkpoint: Checkpoint | None = None,
    after: AfterCall | None = None,
    watch: Watch | None = None,
    answer: Answer | None = None,
    approvals: Approvals | None = None,
) -> ToolCallOutcome:
    """Run one tool call through the whole pipeline; never raises for model or tool errors
    (a store that fails while the call waits is the face's failure and propagates)."""
    ctx = ctx or ToolContext()
    started = time.monotonic()
    emit_start(on_event, name, arguments, ctx)
    pending = None
    try:
        tool = lookup(registry, name, arguments)
        call = tool.effects.request(name, validate(tool, arguments), ctx.call_id)
        claimed = await check_policy(call, env, policy, approvals, ctx.step, on_event)
        if claimed is None:  # the usual case (allowed): as lean as before the store (loop_overhead)
            answered = None if answer is None else await answer(call)
            produced = answered if answered is not None else await run_call(tool, call, env, ctx, checkpoint, watch,
                                                                            after)
        else:
            with _finishing(approvals, claimed):
                produced = await _answer_or_run(tool, call, env, ctx, checkpoint, watch, after, answer)
    except _CallFailed as failure:
        produced, pending = ToolOutput(str(failure), is_error=True, data=failure.decision), failure.pending
    return emit_end(on_event, truncate(name, produced, config, ctx, started, pending))


async def _answer_or_run(tool: RegisteredTool, call: ToolCallRequest, env: ExecutionEnvironment, ctx: ToolContext,
                         checkpoint: Checkpoint | None, watch: Watch | None, after: AfterCall | None,
                         answer: Answer | None) -> ToolOutput:
    """ANSWER, else WATCH → CHECKPOINT → EXECUTE → AFTER."""
    answered = None if answer is None else await answer(call)
    if answered is not None:
        return answered
    return await run_call(tool, call, env, ctx, checkpoint, watch, after)


@contextlib.contextmanager
def _finishing(approvals: Approvals | None, claimed: PendingCall | None) -> Any:
    """Marks a claimed entry ``ran`` once its call returned (``interrupted`` when it was
    cancelled or failed inside); a process killed meanwhile leaves it ``running``, which its
    owner reports as interrupted on restart (``PendingStore.interrupt``), never runs again."""
    if approvals is None or claimed is None:
        yield
        return
    status = "interrupted"
    try:
        yield
        status = "ran"
    finally:
        approvals.store.finish(claimed.id, status)


async def resume_pending(
    registry: ToolRegistry,
    pending_id: str,
    env: ExecutionEnvironment,
    approvals: Approvals,
    *,
    config: TruncationConfig | None = None,
    ctx: ToolContext | None = None,
    on_event: ToolEventSink | None = None,
    checkpoint: Checkpoint | None = None,
    after: AfterCall | None = None,
    watch: Watch | None = None,
) -> ToolCallOutcome:
    """Finish the pending call ``pending_id`` as its store says: approved, it runs once (the
    ``claim`` decides; LOOKUP and VALIDATE again, POLICY is the human's answer); denied or
    withdrawn, the result says who and why; still pending, the result says so and holds it
    (``result.pending``); already claimed, the result says it ran, runs elsewhere or was
    interrupted, and nothing runs. :class:`~codeloop.policy.pending.UnknownPendingCallError`
    for an id the store does not have."""
    entry = approvals.store.get(pending_id)
    ctx = ctx or ToolContext(call_id=entry.call_id, step=entry.step)
    started = time.monotonic()
    emit_start(on_event, entry.tool, entry.arguments, ctx)
    pending = None
    try:
        if entry.status == "pending":
            raise _CallFailed(f"Tool call '{entry.tool}' still waits for an answer (pending call {entry.id}).",
                              entry, entry.decision)
        claimed = _settle(approvals, entry, on_event)
        with _finishing(approvals, claimed):
            tool = lookup(registry, entry.tool, entry.arguments)
            call = tool.effects.request(entry.tool, validate(tool, entry.arguments), ctx.call_id)
            produced = await run_call(tool, call, env, ctx, checkpoint, watch, after)
    except _CallFailed as failure:
        produced, pending = ToolOutput(str(failure), is_error=True, data=failure.decision), failure.pending
    return emit_end(on_event, truncate(entry.tool, produced, config, ctx, started, pending))


def emit_start(on_event: ToolEventSink | None, name: str, arguments: Mapping[str, Any] | str | None,
               ctx: ToolContext) -> None:
    if on_event is not None:
        on_event(ToolCallStarted(name, ctx.call_id, arguments if isinstance(arguments, Mapping) else {}))


def emit_end(on_event: ToolEventSink | None, outcome: ToolCallOutcome) -> ToolCallOutcome:
    if on_event is not None:
        error = outcome.is_error
        on_event(ToolCallEnded(outcome.tool_name, outcome.call_id, None if error else outcome.full_output,
                               outcome.full_output if error else None, outcome.duration_ms))
    return outcome


def lookup(registry: ToolRegistry, name: str, arguments: Mapping[str, Any] | str | None = None) -> RegisteredTool:
    """LOOKUP: the registered tool, or an error naming the available tools (and the
    equivalent call when the name is a common invention such as ``delete_file``)."""
    tool = registry.get(name)
    if tool is None:
        available = ", ".join(registry.names()) or "none"
        message = f"Unknown tool '{name}'. Available tools: {available}."
        schemas = {d.name: d.parameters for d in registry.definitions()}
        given = arguments if isinstance(arguments, Mapping) else None
        equivalent = equivalent_call(name, given, schemas)
        if equivalent is not None:
            message += f" To do that, call {equivalent[0]} with arguments {json.dumps(equivalent[1])}."
        raise _CallFailed(message)
    return tool


def validate(tool: RegisteredTool, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """VALIDATE: parse JSON if needed and check against the tool's JSON Schema."""
    try:
        args = parse_arguments(tool.name, arguments)
        validate_arguments(tool.name, tool.definition.parameters, args)
    except ArgumentError as exc:
        raise _CallFailed(str(exc)) from None
    return args


async def check_policy(
    call: ToolCallRequest,
    env: ExecutionEnvironment,
    policy: ToolPolicy | None,
    approvals: Approvals | None = None,
    step: int | str | None = None,
    on_event: ToolEventSink | None = None,
) -> PendingCall | None:
    """POLICY: allow, deny with the policy's reason, or ask. An ask becomes a pending call in
    ``approvals.store``; waiting, the answer decides (the entry, claimed, is returned: the
    caller finishes it); not waiting, the call fails holding the entry. Without a store, the
    call fails holding an entry nobody stored."""
    try:
        decision = await (policy or allow_all)(call, env)
    except Exception as exc:
        raise _CallFailed(f"Tool call '{call.name}' denied: the policy check failed ({exc}).") from None
    if decision.action == "allow":
        return None
    if decision.action == "deny":
        raise _CallFailed(f"Tool call '{call.name}' denied by policy: {decision.reason}", decision=decision)
    if approvals is not None:
        try:
            entry = approvals.store.add(PendingCall.raise_for(
                call, decision, session=approvals.session, face=approvals.face, step=step,
                remember_as=decision.remember_as))
        except Exception as exc:  # nobody could answer an ask that is not stored
            raise _CallFailed(f"Tool call '{call.name}' needs approval ({decision.reason}) and was not run: the "
                              f"pending store cannot be written ({exc}).", decision=decision) from None
        if on_event is not None:
            on_event(ToolCallPending(call.call_id, entry))
        if not approvals.wait:
            raise _CallFailed(f"Tool call '{call.name}' needs approval ({decision.reason}); it waits as "
                              f"pending call {entry.id}.", entry, decision)
        return _settle(approvals, await _answer_of(approvals, entry, on_event), on_event)
    held = PendingCall.raise_for(call, decision, session="", face="tool", step=step, remember_as=decision.remember_as)
    raise _CallFailed(f"Tool call '{call.name}' needs approval ({decision.reason}) and nobody can answer here "
                      "(no pending store), so it was not run.", held, decision)


async def _answer_of(approvals: Approvals, entry: PendingCall, on_event: ToolEventSink | None) -> PendingCall:
    """The entry once answered: by the client (told at once) or by anyone else through the store."""
    store = approvals.store
    waiting = asyncio.ensure_future(store.wait(entry.id, approvals.poll_interval))
    asking = asyncio.ensure_future(approvals.client(entry, store)) if approvals.client is not None else None
    left = approvals.time_left() if approvals.time_left is not None else None
    try:
        async with asyncio.timeout(left):
            return await _first_answer(store, entry, waiting, asking)
    except TimeoutError:
        # The session's time is up: nobody may answer for it any more (an answer given in the
        # same instant wins the compare-and-set and is what counts).
        store.withdraw(approvals.session, "the session's time limit was reached while the call waited")
        answered = store.get(entry.id)
        if answered.status != "withdrawn":
            return answered
        if on_event is not None:
            on_event(ToolCallDecided(answered.call_id, answered))
        raise _CallFailed(f"Tool call '{entry.tool}' was not run: the session's time limit was reached "
                          f"while it waited for an answer (pending call {entry.id}).", decision=entry.decision) from None
    except asyncio.CancelledError:
        # Nobody waits for the answer any more (the session was cancelled): an answer given
        # now must not look as if it could still run anything.
        for withdrawn in store.withdraw(approvals.session, "the session stopped waiting for an answer (cancelled)"):
            if on_event is not None:
                on_event(ToolCallDecided(withdrawn.call_id, withdrawn))
        raise
    finally:
        for task in (waiting, asking):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def _first_answer(store: PendingStore, entry: PendingCall, waiting: asyncio.Future[Any],
                        asking: asyncio.Future[Any] | None) -> PendingCall:
    """The client's answer as soon as it gave one (no wait for the next poll), else the store's."""
    if asking is not None:
        await asyncio.wait({waiting, asking}, return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            failed = None if asking.cancelled() else asking.exception()
            if failed is not None:  # a broken prompt refuses (others may have answered first)
                store.decide(entry.id, "deny", "codeloop", f"asking for approval failed ({failed})")
            answered = store.get(entry.id)
            if answered.status != "pending":
                return answered
    answered_elsewhere: PendingCall = await waiting
    return answered_elsewhere


def _settle(approvals: Approvals, entry: PendingCall, on_event: ToolEventSink | None) -> PendingCall:
    """What an answered entry means for its call: the entry, claimed (it runs now, here, once),
    or a failure saying who refused it and why, or that it ran or runs elsewhere."""
    name = entry.tool
    if on_event is not None:
        on_event(ToolCallDecided(entry.call_id, entry))
    who = entry.decided_by or "?"
    why = f": {entry.decision_reason}" if entry.decision_reason else ""
    if entry.status == "denied":
        raise _CallFailed(f"Tool call '{name}' was not approved ({entry.reason}): denied by {who}{why}.",
                          decision=entry.decision)
    if entry.status == "withdrawn":
        raise _CallFailed(f"Tool call '{name}' was not run: its approval was withdrawn{why}.", decision=entry.decision)
    if entry.status == "approved" and approvals.store.claim(entry.id):
        if entry.scope == "always" and approvals.remember is not None:
            approvals.remember(entry)
        return entry
    now = approvals.store.get(entry.id).status
    what = {"ran": "it already ran", "running": "it is running elsewhere",
            "interrupted": "it was interrupted by a crash after its approval and is never run again"}
    raise _CallFailed(f"Tool call '{name}' was approved by {who} but not run again here: "
                      f"{what.get(now, 'it is ' + now)} (pending call {entry.id}).")


async def run_call(
    tool: RegisteredTool, call: ToolCallRequest, env: ExecutionEnvironment, ctx: ToolContext,
    checkpoint: Checkpoint | None, watch: Watch | None, after: AfterCall | None,
) -> ToolOutput:
    """WATCH → CHECKPOINT → EXECUTE → the watch's AFTER → AFTER, for a call that passed POLICY."""
    watched = await watch(call, env) if watch is not None else None
    if checkpoint is None or not call.changes:  # the usual case: nothing to pass the seam
        produced = await execute(tool, call.arguments, env, ctx)
    else:
        try:
            await _seam(checkpoint, checkpoint.before, call, call.effects, call.paths, ctx.step)
        except Exception as exc:
            return ToolOutput(f"Tool '{call.name}' not run: its checkpoint failed ({exc}).", is_error=True)
        produced = ToolOutput(f"Tool '{call.name}' was cancelled.", is_error=True)
        try:
            produced = await execute(tool, call.arguments, env, ctx)
        finally:
            try:
                await _seam(checkpoint, checkpoint.after, call, call.effects, call.paths, ctx.step, produced)
            except Exception as exc:
                produced = ToolOutput(f"{produced.text}\n(Tool '{call.name}' ran, but its checkpoint failed: {exc}.)",
                                      is_error=True, data=produced.data)
    for step in (watched, after):
        if step is not None:
            produced = await step(call, produced)
    return produced


async def _seam(checkpoint: Checkpoint, method: Callable[..., None], *args: Any) -> None:
    """Call a checkpoint's ``before`` or ``after``: in a worker thread when it says it blocks."""
    if getattr(checkpoint, "runs_in_thread", False):
        await asyncio.to_thread(method, *args)
    else:
        method(*args)


async def execute(
    tool: RegisteredTool, args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext,
) -> ToolOutput:
    """EXECUTE: run the executor; every exception becomes an error output."""
    try:
        produced = await tool.executor(args, env, ctx)
    except (WorkspaceError, ToolError) as exc:
        return ToolOutput(str(exc), is_error=True, data=exc)
    except Exception as exc:
        return ToolOutput(describe_exception(tool.name, exc), is_error=True)
    if isinstance(produced, ToolOutput):
        return produced
    if isinstance(produced, str):
        return ToolOutput(produced)
    return ToolOutput(
        f"Tool '{tool.name}' returned {type(produced).__name__} instead of text (a bug in the tool).",
        is_error=True,
    )


def truncate(
    name: str, produced: ToolOutput, config: TruncationConfig | None, ctx: ToolContext, started: float,
    pending: PendingCall | None = None,
) -> ToolCallOutcome:
    """TRUNCATE: characters then lines (spec §5.3); keep the full text beside it."""
    return ToolCallOutcome(
        output=truncate_tool_output(produced.text, name, config),
        is_error=produced.is_error,
        full_output=produced.text,
        tool_name=name,
        call_id=ctx.call_id,
        images=produced.images,
        duration_ms=int((time.monotonic() - started) * 1000),
        pending=pending,
        data=produced.data,
    )


def describe_exception(tool_name: str, exc: Exception) -> str:
    """A short model-readable text for an unexpected exception of a tool."""
    if isinstance(exc, UnicodeDecodeError):
        return f"Tool '{tool_name}' failed: the file is not valid UTF-8 text ({exc.reason} at byte {exc.start})."
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"Tool '{tool_name}' failed: {exc.strerror}{where}"
    detail = str(exc) or type(exc).__name__
    return f"Tool '{tool_name}' failed: {type(exc).__name__}: {detail}"
