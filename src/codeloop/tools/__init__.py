"""Tools: the registry, the execution pipeline, truncation and the core tool families.

Public entry points: :func:`build_pipeline`, the one factory of a face's :class:`Pipeline`
(``await pipeline.run(PipelineCall(name, arguments))``, issue 30); underneath it
:func:`execute_tool_call` (the steps of loop spec §3.8; an ask waits in the pending store of
``codeloop.policy.pending`` and :meth:`Pipeline.resume` finishes it), :class:`ToolRegistry`,
:func:`truncate_tool_output` (spec §5), and the tool sets in ``codeloop.tools.sets``.
Policies answer with :class:`codeloop.policy.Decision`; tools are described by ``codeloop.llm``'s
``ToolDefinition`` (one family of tool types).
"""

from __future__ import annotations

from codeloop.policy.approval import ToolCallRequest, ToolPolicy
from codeloop.tools.call_path import Pipeline, PipelineCall, build_pipeline
from codeloop.tools.errors import PatchError, ToolError
from codeloop.tools.pipeline import execute_tool_call
from codeloop.tools.registry import (
    Executor,
    RegisteredTool,
    ToolCallOutcome,
    ToolContext,
    ToolOutput,
    ToolRegistry,
)
from codeloop.tools.truncation import (
    TruncationConfig,
    truncate_lines,
    truncate_output,
    truncate_tool_output,
)

__all__ = [
    "Executor",
    "PatchError",
    "Pipeline",
    "PipelineCall",
    "RegisteredTool",
    "ToolCallOutcome",
    "ToolCallRequest",
    "ToolContext",
    "ToolError",
    "ToolOutput",
    "ToolPolicy",
    "ToolRegistry",
    "TruncationConfig",
    "build_pipeline",
    "execute_tool_call",
    "truncate_lines",
    "truncate_output",
    "truncate_tool_output",
]
