"""Read a session log back: the conversation, to continue it (``--resume``, ``--continue``),
and a Markdown transcript for people (``codeloop sessions export --format md``).

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

import json
from collections.abc import Callable, Iterable

from codeloop.agent.budget import Price, Spent, charge_of, restored_cost
from codeloop.agent.history import AssistantTurn, CallResult, SteeringTurn, ToolResultsTurn, Turn, UserTurn
from codeloop.llm.types import ToolCall, Usage
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


def spent_in_log(events: Iterable[LoggedEvent], price: Price | None) -> Spent:
    """What a logged session spent (issue 36), so a resumed one goes on from there: the last
    ``budget`` event's figures, plus the calls logged after it (a run without limits), their
    cost at ``price``."""
    spent = Spent()
    for e in events:
        d = e.data
        if e.kind == "budget" and isinstance(d.get("used"), dict):
            used = d["used"]
            spent = Spent(restored_cost(float(used.get("cost_usd") or 0)), int(used.get("tokens") or 0),
                          float(used.get("seconds") or 0))
        elif e.kind == "assistant_text_end":
            usage = Usage(input_tokens=int(d.get("input_tokens") or 0), output_tokens=int(d.get("output_tokens") or 0))
            spent.tokens += usage.input_tokens + usage.output_tokens
            spent.cost += charge_of(usage, None, price)
    return spent


_FENCE_OUTPUT_CHARS = 4000
"""Tool output longer than this is cut in the transcript (the JSONL export keeps all)."""


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def to_markdown(session_id: str, events: Iterable[LoggedEvent]) -> str:
    """A readable transcript: inputs, replies numbered by turn (``codeloop rewind --to``), tool
    calls with arguments and (cut) results."""
    out = [f"# Session {session_id}", ""]
    turn = 0
    for e in events:
        d = e.data
        if e.kind == "session_start":
            out += [f"- started {e.timestamp} in `{d.get('working_directory', '')}` "
                    f"with {d.get('model', '')} ({d.get('profile', '')})", ""]
        elif e.kind == "user_input":
            out += ["## User", "", str(d.get("content", "")), ""]
        elif e.kind == "steering_injected":
            out += ["## Steering", "", str(d.get("content", "")), ""]
        elif e.kind == "assistant_text_end":
            turn += 1
            out += [f"## Assistant (turn {turn})", "", str(d.get("text", "")), ""]
        elif e.kind == "tool_call_start":
            args = json.dumps(d.get("arguments", {}), ensure_ascii=False, indent=2)
            out += [f"### Tool call `{d.get('tool_name', '')}`", "", _fence(args), ""]
        elif e.kind == "tool_call_end":
            failed = isinstance(d.get("error"), str)
            text = str(d.get("error") if failed else d.get("output") or "")
            if len(text) > _FENCE_OUTPUT_CHARS:
                text = text[:_FENCE_OUTPUT_CHARS] + f"\n[... {len(text) - _FENCE_OUTPUT_CHARS} more characters]"
            out += [f"Result ({'error' if failed else 'ok'}):", "", _fence(text), ""]
        elif e.kind == "context_compacted":
            dropped = d.get("dropped")
            dropped = dropped if isinstance(dropped, list) else []
            out += [f"> context compacted: {len(dropped)} earlier tool outputs removed "
                    f"(~{d.get('tokens_before', 0)} -> ~{d.get('tokens_after', 0)} tokens; "
                    "recall_output reads one back)", ""]
        elif e.kind == "budget" and d.get("limit"):
            out += [f"> paused: the {d.get('limit')} limit was reached (used: {json.dumps(d.get('used'))})", ""]
        elif e.kind in ("error", "warning"):
            out += [f"> {e.kind}: {d.get('message', '')}", ""]
        elif e.kind == "approval_pending":
            out += [f"> waiting for approval ({d.get('reason', '')}): pending call {d.get('pending_id', '')}", ""]
        elif e.kind == "approval_decided":
            why = f": {d.get('reason')}" if d.get("reason") else ""
            scope = " (always)" if d.get("scope") == "always" else ""
            out += [f"> {d.get('status', '')}{scope} by {d.get('decided_by', '')}{why}", ""]
        elif e.kind == "session_end" and d.get("state") == "closed":
            out += [f"- ended {e.timestamp}: {d.get('reason', '')}", ""]
    return "\n".join(out)
