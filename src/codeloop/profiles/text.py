"""The ``text`` profile: tools taught in the prompt, calls parsed from the reply's text.

For models without native tool calling, or that write calls as text (small local models
served by llama.cpp, web chats). The tool descriptions layer lists every tool with its
parameters in the tagged syntax of :mod:`codeloop.agent.text_tool_calls`; requests carry
no ``tools``. Tools are the Claude Code-aligned core set (edit_file with
old_string/new_string is the easiest edit format for a small model) with a 10 s shell.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.llm.types import ToolDefinition
from codeloop.profiles import prompts
from codeloop.profiles.base import ProviderProfile, first_line
from codeloop.tools.registry import ToolRegistry
from codeloop.tools.sets import core_tools
from codeloop.tools.shell import OPENAI_SHELL_TIMEOUT_MS


def _params(definition: ToolDefinition, compact: bool) -> list[str]:
    props = definition.parameters.get("properties", {}) or {}
    required = set(definition.parameters.get("required", []) or [])
    lines = []
    for name, spec in props.items():
        kind = spec.get("type", "string")
        need = "required" if name in required else "optional"
        desc = "" if compact else f": {(spec.get('description') or '').strip()}"
        lines.append(f"  <{name}> {kind}, {need}{desc}".rstrip(": "))
    return lines


@dataclass
class TextProfile(ProviderProfile):
    """A profile whose tool calls travel as text (``native_tool_calls`` is False)."""

    def describe_tools(self, definitions: list[ToolDefinition]) -> str:
        """Every tool with its parameters, as the tagged syntax expects them."""
        return describe_text_tools(definitions, compact=self.compact)


def describe_text_tools(definitions: list[ToolDefinition], *, compact: bool) -> str:
    """The ``# Available tools`` block of the text profile (also the codali builder's)."""
    blocks = []
    for d in definitions:
        first = first_line(d.description)
        if len(first) > 120 and ". " in first:
            first = first.split(". ")[0] + "."
        blocks.append("\n".join([f"## {d.name}: {first}", *_params(d, compact)]))
    return "# Available tools\n" + "\n".join(blocks)


def create_text_profile(
    model: str = "qwen2.5-coder-1.5b-instruct", *, context_window_size: int = 8_192, provider: str | None = None,
) -> TextProfile:
    """Text-syntax tools for small or tool-less models; compact prompt below 16 k tokens."""
    return TextProfile(
        id="text",
        model=model,
        tool_registry=ToolRegistry.of(core_tools(OPENAI_SHELL_TIMEOUT_MS)),
        base_instructions=prompts.TEXT,
        compact_instructions=prompts.TEXT_COMPACT,
        provider=provider,
        supports_reasoning=False,
        supports_parallel_tool_calls=False,
        context_window_size=context_window_size,
        native_tool_calls=False,
        tool_call_recovery=True,
        stop_sequences=("</tool>", "<tool_result"),
        temperature=0.0,
        # A quarter of the window: room for an answer or a small file, never the whole window.
        max_output_tokens=max(512, context_window_size // 4),
        default_command_timeout_ms=OPENAI_SHELL_TIMEOUT_MS,
    )
