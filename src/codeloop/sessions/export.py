"""Render a session log for people: Markdown transcript (``codeloop sessions export --format md``)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from codeloop.sessions.log import LoggedEvent

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
        elif e.kind in ("error", "warning"):
            out += [f"> {e.kind}: {d.get('message', '')}", ""]
        elif e.kind == "session_end" and d.get("state") == "closed":
            out += [f"- ended {e.timestamp}: {d.get('reason', '')}", ""]
    return "\n".join(out)
