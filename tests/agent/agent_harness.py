"""Helpers to drive a Session with the ScriptedAdapter (a real ProviderAdapter) over a
real LocalExecutionEnvironment in a temporary workspace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeloop.agent.config import SessionConfig
from codeloop.agent.events import SessionEvent
from codeloop.agent.session import Session
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response, tool_call_response
from codeloop.llm.client import Client
from codeloop.llm.types import Response
from codeloop.profiles import create_profile

PROFILES = ("openai", "anthropic", "gemini", "text")


def tagged(name: str, args: dict[str, Any]) -> str:
    """A call in the text profile's tagged syntax."""
    params = "".join(
        f"<{k}>{v if isinstance(v, str) else json.dumps(v)}</{k}>" for k, v in args.items()
    )
    return f'<tool name="{name}">{params}</tool>'


def calls(profile_id: str, *items: tuple[str, dict[str, Any]], text: str = "") -> Response:
    """A reply calling tools, in the profile's way (structured, or tagged text for ``text``)."""
    if profile_id == "text":
        return text_response("\n".join([text, *(tagged(n, a) for n, a in items)]).strip())
    return tool_call_response(*items, text=text)


class Harness:
    """A session, its adapter, its workspace and every event it emitted."""

    def __init__(self, profile_id: str, root: Path, script: list[Any], config: SessionConfig | None) -> None:
        self.root = root
        self.adapter = ScriptedAdapter(script)
        self.profile = create_profile(profile_id)
        self.env = LocalExecutionEnvironment(str(root))
        self.session = Session(self.profile, self.env, config or SessionConfig(), Client({"scripted": self.adapter}))
        self.events: list[SessionEvent] = []
        self.session.subscribe(self.events.append)

    def kinds(self) -> list[str]:
        return [e.kind.value for e in self.events]

    def of(self, cls: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]

    def sent_texts(self, request_index: int) -> list[str]:
        """Text of every non-system message of one recorded request (tool results included)."""
        out = []
        for m in self.adapter.requests[request_index].messages[1:]:
            out.append(m.text or "".join(
                str(p.tool_result.content) for p in m.content if p.tool_result is not None))
        return out
