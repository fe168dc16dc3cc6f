"""The one call path: a :class:`Pipeline` per face, built by :func:`build_pipeline` (issue 30).

Every face (the agent's ``Session``, the relay, spaces and its HTTP file endpoints, codali's
builder and critic, ``codeloop tool``) builds one ``Pipeline`` from its resolved settings and
sends each call through ``pipeline.run(call)``; what differs between faces is only what it
was built with:

- ``registry``: the face's tools (a model's tool set, the relay's commands, spaces'
  operations);
- ``policy`` and ``pending``: the POLICY step (``tools/pipeline.py`` ``check_policy``); an
  "ask" is a :class:`~codeloop.policy.pending.PendingCall` in the ``pending`` store (issue 34),
  answered by whoever reads the store. With ``wait_for_answer`` the call waits for it (and
  ``ask_client``, the terminal prompt, is told at once); without, it comes back as
  ``ToolCallOutcome.pending`` and :meth:`Pipeline.resume` (its id) runs it once approved;
- ``hooks``: the user's ``pre_tool_call`` hooks wrap the policy and ``post_tool_call``
  hooks become the AFTER step (:mod:`codeloop.tools.hooks`);
- ``checkpoint``: an opaque component entered around EXECUTE (the session recorder's file
  snapshots); the pipeline passes it through and knows nothing of what it keeps;
- ``truncation``: the face's output cuts (the relay's 4000-character head and tail);
- ``events``: a :data:`~codeloop.tools.tool_events.ToolEventSink` getting typed events,
  from which the face builds its wire form once; with a sink, a command's streamed output
  is announced too (:class:`~codeloop.tools.tool_events.ToolCallOutput`).

Faces import this module (and the policy seam), never ``environments/`` implementations or
``tools/workspace_ops.py`` (``lint-imports``, contract ``faces-use-the-pipeline``): the
environment a pipeline runs in is opened here too (:func:`open_environment`, with the
sandbox rules of ``environments/factory.py``: ``settle_sandbox``, ``probe_bwrap``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.factory import (
    SandboxOptionError,
    check_sandbox_options,
    open_environment,
    settle_sandbox,
)
from codeloop.environments.sandbox import SandboxMode, probe_bwrap
from codeloop.policy.approval import ToolPolicy
from codeloop.policy.pending import DEFAULT_POLL_INTERVAL, PendingStore
from codeloop.tools.hooks import Hooks, Warn
from codeloop.tools.pipeline import (
    AfterCall,
    Answer,
    Approvals,
    AskClient,
    Checkpoint,
    Remember,
    Watch,
    execute_tool_call,
    resume_pending,
)
from codeloop.tools.registry import ToolCallOutcome, ToolContext, ToolRegistry
from codeloop.tools.tool_events import ToolCallOutput, ToolEventSink
from codeloop.tools.truncation import TruncationConfig
from codeloop.tools.workspace_ops import BeforeChange

__all__ = [
    "Approvals",
    "AskClient",
    "Pipeline",
    "PipelineCall",
    "Remember",
    "SandboxMode",
    "SandboxOptionError",
    "build_pipeline",
    "check_sandbox_options",
    "open_environment",
    "probe_bwrap",
    "settle_sandbox",
]


@dataclass(frozen=True)
class PipelineCall:
    """One call as a face hands it to :meth:`Pipeline.run`."""

    name: str
    """The tool's name, as the caller wrote it (an unknown one becomes an error outcome)."""
    arguments: Mapping[str, Any] | str | None = None
    """An object, or JSON text of one (a model's raw arguments)."""
    call_id: str | None = None
    """The provider's id of the call, if any (copied to the outcome and the events)."""
    session_id: str | None = None
    """The session whose reads a write must follow (``write_file``'s read-first rule)."""
    lenient: bool = False
    """The call comes from a small local model (``ToolContext.lenient``)."""
    before_change: BeforeChange | None = None
    """Called right before this call changes the workspace or starts a process, with what it
    is about to do (the relay's crash journal); raising stops the change."""
    step: int | str | None = None
    """The face's unit of work the call belongs to (``ToolContext.step``), for the checkpoint
    seam: the agent's turn, a relay reply, a spaces operation."""
    answer: Answer | None = None
    """The ANSWER step for this call (the running input's guards of an agent session), tried
    before the pipeline's own ``answer``; it belongs to what is running now, not to the face."""


@dataclass(frozen=True)
class Pipeline:
    """A face's settings of the one call path; built once by :func:`build_pipeline`."""

    registry: ToolRegistry
    env: ExecutionEnvironment
    policy: ToolPolicy | None = None
    truncation: TruncationConfig | None = None
    events: ToolEventSink | None = None
    checkpoint: Checkpoint | None = None
    after: AfterCall | None = None
    watch: Watch | None = None
    answer: Answer | None = None
    approvals: Approvals | None = None
    """Where asks wait for an answer (None: an ask is not run; its outcome says so)."""

    def _context(self, call: PipelineCall) -> ToolContext:
        sink = self.events
        on_output = None
        if sink is not None:
            call_id = call.call_id

            def on_output(stream: str, text: str) -> None:
                sink(ToolCallOutput(call_id, stream, text))

        return ToolContext(call.call_id, call.session_id, on_output, call.before_change, call.lenient, call.step)

    async def run(self, call: PipelineCall) -> ToolCallOutcome:
        """EVENT → LOOKUP → VALIDATE → POLICY → ANSWER → WATCH → CHECKPOINT → EXECUTE → AFTER →
        TRUNCATE → EVENT (``tools/pipeline.py``); never raises for what a model or a tool did."""
        return await execute_tool_call(
            self.registry, call.name, call.arguments, self.env, policy=self.policy,
            config=self.truncation, ctx=self._context(call), on_event=self.events, checkpoint=self.checkpoint,
            after=self.after, watch=self.watch, answer=call.answer or self.answer, approvals=self.approvals)

    async def resume(self, pending: str, *, call: PipelineCall | None = None) -> ToolCallOutcome:
        """Finish the call held as pending call ``pending``, as the store says: approved and
        claimed here, it runs once; refused, withdrawn or claimed before, the outcome says so
        and nothing runs (``tools/pipeline.py`` ``resume_pending``). ``call`` adds what the
        face attaches to the call (its journal, its step).
        :class:`~codeloop.policy.pending.UnknownPendingCallError` for an unknown id."""
        if self.approvals is None:
            raise ValueError("this pipeline has no pending store to resume a call from")
        ctx = self._context(call) if call is not None else None
        return await resume_pending(
            self.registry, pending, self.env, self.approvals, config=self.truncation, ctx=ctx,
            on_event=self.events, checkpoint=self.checkpoint, after=self.after, watch=self.watch)


def build_pipeline(
    registry: ToolRegistry,
    env: ExecutionEnvironment,
    *,
    policy: ToolPolicy | None = None,
    hooks: Hooks | None = None,
    session_id: str = "",
    hook_warning: Warn | None = None,
    checkpoint: Checkpoint | None = None,
    truncation: TruncationConfig | None = None,
    events: ToolEventSink | None = None,
    watch: Watch | None = None,
    answer: Answer | None = None,
    pending: PendingStore | None = None,
    session: str | None = None,
    face: str = "tool",
    wait_for_answer: bool = False,
    ask_client: AskClient | None = None,
    remember: Remember | None = None,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    approvals: Approvals | None = None,
) -> Pipeline:
    """The one factory of a face's :class:`Pipeline`. ``hooks`` (when it holds any) wrap
    ``policy`` (their deny ends a call, their ask is an ask like the policy's) and add their
    ``post_tool_call`` texts; their failures go to ``hook_warning``.

    ``pending`` is the store every ask of this pipeline goes to, as entries of ``session``
    (default ``session_id``) raised by ``face``; ``wait_for_answer``, ``ask_client``,
    ``remember`` and ``poll_interval`` are :class:`Approvals`' fields, which ``approvals`` gives
    at once instead (its empty ``session`` becomes ``session_id``). Without a store, an ask
    is not run: its outcome says it needs approval (``result.pending`` holds what would run)."""
    after = None
    if hooks:
        warn = hook_warning or (lambda _message: None)
        policy = hooks.policy(policy, session_id, warn)
        after = partial(hooks.after_call, session_id=session_id, warn=warn)
    if approvals is not None:
        if not approvals.session:
            approvals = replace(approvals, session=session if session is not None else session_id)
    elif pending is not None:
        approvals = Approvals(pending, session_id if session is None else session, face, wait_for_answer,
                              ask_client, remember, poll_interval)
    return Pipeline(registry, env, policy, truncation, events, checkpoint, after, watch, answer, approvals)
