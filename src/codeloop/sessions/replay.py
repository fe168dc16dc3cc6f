"""Rebuild the conversation of a logged session, to continue it (``--resume``, ``--continue``).

What the event stream must carry, and does (``codeloop.agent.events``):

- ``user_input.content`` → :class:`UserTurn`;
- ``assistant_text_end.text`` (+ ``reasoning``) → :class:`AssistantTurn`, whose tool calls
  are the ``tool_call_start`` events that follow it (``call_id``, ``tool_name``, ``arguments``);
- ``tool_call_end`` (``output`` or ``error``) → one :class:`CallResult` each, grouped into a
  :class:`ToolResultsTurn` in call order;
- ``steering_injected.content`` → :class:`SteeringTurn` (loop warnings arrive this way too).

Not recoverable from events: provider message objects (thinking signatures, response ids),
the raw text of arguments that did not parse, and images. The rebuilt assistant turns
therefore have ``message=None``, which every profile accepts (it is the path used for
recovered text tool calls). ``tool_call_end.output`` is the *full* output, so results are
truncated again here, as the model saw them (loop spec §5.1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from codeloop.agent.history import AssistantTurn, CallResult, SteeringTurn, ToolResultsTurn, Turn, UserTurn
from codeloop.llm.types import ToolCall
from codeloop.sessions.log import LoggedEvent
from codeloop.tools.truncation import truncate_tool_output

Truncate = Callable[[str, str], str]
"""``(output, tool_name) -> text the model sees``."""


def rebuild_history(events: Iterable[LoggedEvent], truncate: Truncate = truncate_tool_output) -> list[Turn]:
    """The turns to put in a new Session's ``History`` so it continues where the log ends.

    A reply whose tool calls never finished (the process died mid-call) gets an error result
    per missing call, so the model is told and providers see every call answered.
    """
    turns: list[Turn] = []
    pending: AssistantTurn | None = None
    calls: list[ToolCall] = []
    results: dict[str, CallResult] = {}

    def flush() -> None:
        nonlocal pending
        if pending is None:
            return
        turns.append(AssistantTurn(content=pending.content, reasoning=pending.reasoning, tool_calls=tuple(calls)))
        if calls:
            turns.append(ToolResultsTurn(tuple(
                results.get(c.id) or CallResult(c.id, c.name, "error: the tool call was interrupted "
                                                "(the session stopped before it finished)", is_error=True)
                for c in calls
            )))
        pending = None
        calls.clear()
        results.clear()

    for e in events:
        d = e.data
        if e.kind == "user_input":
            flush()
            turns.append(UserTurn(str(d.get("content", ""))))
        elif e.kind == "steering_injected":
            flush()
            turns.append(SteeringTurn(str(d.get("content", ""))))
        elif e.kind == "assistant_text_end":
            flush()
            reasoning = d.get("reasoning")
            pending = AssistantTurn(content=str(d.get("text", "")),
                                    reasoning=reasoning if isinstance(reasoning, str) else None)
        elif e.kind == "tool_call_start" and pending is not None:
            args = d.get("arguments")
            calls.append(ToolCall(id=str(d.get("call_id", "")), name=str(d.get("tool_name", "")),
                                  arguments=args if isinstance(args, dict) else {}))
        elif e.kind == "tool_call_end" and pending is not None:
            call_id, name = str(d.get("call_id", "")), str(d.get("tool_name", ""))
            error = d.get("error")
            if isinstance(error, str):
                results[call_id] = CallResult(call_id, name, error, is_error=True)
            else:
                results[call_id] = CallResult(call_id, name, truncate(str(d.get("output") or ""), name))
    flush()
    return turns
