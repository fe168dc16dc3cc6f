"""Codali's reads, as a pipeline (codali spec §5 ``file.read``/``docdex.open``; issue 30).

The answers to ``AGENT_REQUEST`` needs read files through this pipeline's one tool, so a
codali read takes the one bounded read of ``workspace_ops`` and the face's POLICY step like
every other face's; ``codeloop.codali.answer`` words the spec's warnings from the typed error.
"""

from __future__ import annotations

from typing import Any

from codeloop.environments.base import ExecutionEnvironment
from codeloop.policy.approval import ToolPolicy
from codeloop.tools import workspace_ops as ops
from codeloop.tools.call_path import Pipeline, build_pipeline
from codeloop.tools.registry import ToolContext, ToolOutput, ToolRegistry, make_tool


async def _read_text(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
    text = await ops.read_text(env, args["path"])
    return ToolOutput(f"read {len(text)} characters", data=text)


READ_TEXT = make_tool("read_text", "Codali's read of one UTF-8 file.", {"path": {"type": "string"}}, ["path"],
                      _read_text)
"""The one tool: ``ToolOutput.data`` is the file's text."""


def codali_pipeline(env: ExecutionEnvironment, policy: ToolPolicy | None = None) -> Pipeline:
    """The pipeline codali's answers read through."""
    return build_pipeline(ToolRegistry.of([READ_TEXT]), env, policy=policy)
