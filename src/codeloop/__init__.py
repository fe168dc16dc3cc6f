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

_EXPORTS = {
    "codeloop.agent": "Session SessionConfig SessionEvent SessionState EventKind event_to_json",
    "codeloop.profiles": "ProviderProfile create_profile create_openai_profile create_anthropic_profile "
    "create_gemini_profile create_text_profile",
    "codeloop.llm": "Client Message Request Response generate OpenAICompatibleAdapter ScriptedAdapter "
    "ToolDefinition",
    "codeloop.environments": "ExecutionEnvironment LocalExecutionEnvironment ExecResult WorkspaceError",
    "codeloop.environments.sandbox": "SandboxedExecutionEnvironment",
    "codeloop.environments.ssh": "SSHExecutionEnvironment",
    "codeloop.tools": "ToolRegistry RegisteredTool ToolCallOutcome execute_tool_call",
}
"""The public names, by home module."""
_HOMES = {name: home for home, names in _EXPORTS.items() for name in names.split()}

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
