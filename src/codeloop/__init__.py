"""codeloop: a coding-agent engine — agent loop, unified LLM client, hardened workspace runtime.

The stable public names are listed in ``__all__`` and importable from here::

    from codeloop import Client, Session, LocalExecutionEnvironment, create_profile

Importing ``codeloop`` does nothing observable and loads nothing else: each name is
imported from its home module the first time it is used (``codeloop --help`` stays fast).
Everything not listed here may change between versions.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_HOMES: dict[str, str] = {
    # agent loop
    "Session": "codeloop.agent",
    "SessionConfig": "codeloop.agent",
    "SessionEvent": "codeloop.agent",
    "SessionState": "codeloop.agent",
    "EventKind": "codeloop.agent",
    "event_to_json": "codeloop.agent",
    # profiles
    "ProviderProfile": "codeloop.profiles",
    "create_profile": "codeloop.profiles",
    "create_openai_profile": "codeloop.profiles",
    "create_anthropic_profile": "codeloop.profiles",
    "create_gemini_profile": "codeloop.profiles",
    "create_text_profile": "codeloop.profiles",
    # unified LLM client
    "Client": "codeloop.llm",
    "Message": "codeloop.llm",
    "Request": "codeloop.llm",
    "Response": "codeloop.llm",
    "generate": "codeloop.llm",
    "OpenAICompatibleAdapter": "codeloop.llm",
    "ScriptedAdapter": "codeloop.llm",
    # environments
    "ExecutionEnvironment": "codeloop.environments",
    "LocalExecutionEnvironment": "codeloop.environments",
    "ExecResult": "codeloop.environments",
    "WorkspaceError": "codeloop.environments",
    "SandboxedExecutionEnvironment": "codeloop.environments.sandbox",
    "SSHExecutionEnvironment": "codeloop.environments.ssh",
    # tools
    "ToolRegistry": "codeloop.tools",
    "RegisteredTool": "codeloop.tools",
    "ToolDefinition": "codeloop.llm",
    "ToolCallOutcome": "codeloop.tools",
    "execute_tool_call": "codeloop.tools",
}

_DEPRECATED: dict[str, tuple[str, str]] = {
    # The pipeline's result was called ToolResult, the name of the LLM layer's own (spec §5.4).
    "ToolResult": ("codeloop.tools", "ToolCallOutcome"),
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        old_home, new_name = _DEPRECATED[name]
        warnings.warn(f"codeloop.{name} is deprecated: use codeloop.{new_name}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(old_home), new_name)
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'codeloop' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
