"""Tools: the registry, the execution pipeline, truncation and the core tool families.

Public entry points: :func:`execute_tool_call` (loop spec §3.8) and
:func:`resume_tool_call` (a call held for approval), :class:`ToolRegistry`,
:func:`truncate_tool_output` (spec §5), and the tool sets in ``codeloop.tools.sets``.
Policies answer with :class:`codeloop.policy.Decision`.
"""

from __future__ import annotations

from codeloop.policy.approval import Approver, PendingApproval, ToolCallRequest, ToolPolicy
from codeloop.tools.errors import PatchError, ToolError
from codeloop.tools.pipeline import execute_tool_call, resume_tool_call
from codeloop.tools.registry import (
    Executor,
    ImageData,
    RegisteredTool,
    ToolContext,
    ToolDefinition,
    ToolOutput,
    ToolRegistry,
    ToolResult,
)
from codeloop.tools.truncation import (
    TruncationConfig,
    truncate_lines,
    truncate_output,
    truncate_tool_output,
)

__all__ = [
    "Approver",
    "Executor",
    "ImageData",
    "PatchError",
    "PendingApproval",
    "RegisteredTool",
    "ToolCallRequest",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolOutput",
    "ToolPolicy",
    "ToolRegistry",
    "ToolResult",
    "TruncationConfig",
    "execute_tool_call",
    "resume_tool_call",
    "truncate_lines",
    "truncate_output",
    "truncate_tool_output",
]
