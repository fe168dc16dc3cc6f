"""The agent loop (coding-agent-loop spec §2, §5.5, §6, §7): sessions, events, subagents.

Import cost matters for ``codeloop --help``: this package imports nothing until a name is
used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeloop.agent.config import SessionConfig
    from codeloop.agent.events import EventKind, SessionEvent, event_to_json
    from codeloop.agent.session import Session, SessionClosedError, SessionState

__all__ = ["EventKind", "Session", "SessionClosedError", "SessionConfig", "SessionEvent", "SessionState",
           "event_to_json"]

_HOMES = {
    "SessionConfig": "codeloop.agent.config",
    "EventKind": "codeloop.agent.events",
    "SessionEvent": "codeloop.agent.events",
    "event_to_json": "codeloop.agent.events",
    "Session": "codeloop.agent.session",
    "SessionClosedError": "codeloop.agent.session",
    "SessionState": "codeloop.agent.session",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'codeloop.agent' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_HOMES[name]), name)
