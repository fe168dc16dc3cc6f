"""The provider profile (loop spec §3.2): a model, its tools, its system prompt; and the
three profiles whose tools travel as native calls (openai §3.4, anthropic §3.5, gemini §3.6).

A profile is plain data plus a registry. Custom tools are registered on
``profile.tool_registry`` (latest wins, §3.7); sessions read the registry at every round,
so a tool registered after the session started is offered from the next model call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codeloop.llm.types import ToolDefinition
from codeloop.profiles import prompts
from codeloop.tools.registry import RegisteredTool, ToolRegistry
from codeloop.tools.sets import anthropic_tools, gemini_tools, openai_tools
from codeloop.tools.shell import ANTHROPIC_SHELL_TIMEOUT_MS, OPENAI_SHELL_TIMEOUT_MS


def first_line(text: str) -> str:
    """The first line of ``text`` without surrounding blanks (a tool's one-line summary)."""
    return text.strip().splitlines()[0] if text.strip() else ""


@dataclass
class ProviderProfile:
    """Tools + prompts for one model family (§3.2). Mutable only through ``tool_registry``."""

    id: str
    """``openai``, ``anthropic``, ``gemini`` or ``text``."""
    model: str
    """Model identifier sent in requests."""
    tool_registry: ToolRegistry
    """All tools of the profile; register custom tools here (latest wins)."""
    base_instructions: str
    """Layer 1 of the system prompt (§6.2), written for this family."""
    provider: str | None = None
    """Adapter to route requests to (``openai``, ``anthropic``, ``gemini``,
    ``openai_compatible``); None = the client's default."""
    compact_instructions: str = ""
    """Shorter layer 1 for small context windows (issue 10); empty = use ``base_instructions``."""
    supports_reasoning: bool = True
    """The model accepts ``reasoning_effort``."""
    supports_streaming: bool = True
    """Replies can be streamed (ASSISTANT_TEXT_DELTA)."""
    supports_parallel_tool_calls: bool = False
    """Several calls of one reply run concurrently (results still in call order)."""
    context_window_size: int = 128_000
    """Tokens the model accepts, for the §5.5 warning."""
    native_tool_calls: bool = True
    """False for the ``text`` profile: tools are taught in the prompt and parsed from text."""
    tool_call_recovery: bool = False
    """Run calls written as text when a reply has no structured call (issue 10)."""
    default_command_timeout_ms: int = 10_000
    """Shell timeout when a call gives none (§5.4: 10 s codex/gemini, 120 s Claude Code)."""
    knowledge_cutoff: str = "unknown"
    """For the ``<environment>`` block."""
    temperature: float | None = None
    """Sampling temperature sent with every request; None = provider default. The ``text``
    profile uses 0 so small local models repeat run to run (issue 10)."""
    stop_sequences: tuple[str, ...] = ()
    """Sent with every request; the ``text`` profile stops after a call's ``</tool>`` so a
    small model cannot invent the tool's result."""
    options: dict[str, Any] = field(default_factory=dict)
    """``provider_options`` sent with every request (beta headers, safety settings...)."""
    max_output_tokens: int | None = None
    """Most tokens one reply may have (``max_tokens``); None = the provider's default. The
    ``text`` profile caps replies: a small model stuck repeating itself would otherwise
    generate until the server's context is full and the request fails."""
    @property
    def compact(self) -> bool:
        """True when the context window is small enough to prefer the compact prompt."""
        return self.context_window_size <= 16_384 and bool(self.compact_instructions)

    def tools(self) -> list[ToolDefinition]:
        """Tool definitions of the registry, as an LLM request carries them."""
        return self.tool_registry.definitions()

    def provider_options(self) -> dict[str, Any] | None:
        """Options for the request's ``provider_options``, None when there are none."""
        return self.options or None

    def describe_tools(self, definitions: list[ToolDefinition]) -> str:
        """Layer 3 of the system prompt: one line per tool (schemas travel in the request)."""
        if not definitions:
            return ""
        lines = [f"- {d.name}: {first_line(d.description)}" for d in definitions]
        return "# Tools\n" + "\n".join(lines)

    def build_system_prompt(
        self, environment: str, project_docs: str, user_instructions: str = "",
        tools: list[ToolDefinition] | None = None,
    ) -> str:
        """The five layers of §6.1 in order, skipping empty ones; ``tools`` defaults to the
        registry's (a session passes its own, which adds the subagent tools)."""
        base = self.compact_instructions if self.compact else self.base_instructions
        defs = self.tool_registry.definitions() if tools is None else tools
        layers = [base, environment, self.describe_tools(defs), project_docs]
        if user_instructions.strip():
            layers.append("# User instructions (highest priority)\n" + user_instructions.strip())
        return "\n\n".join(layer.strip() for layer in layers if layer.strip())


def native_profile(
    profile_id: str, model: str, tools: list[RegisteredTool], base_instructions: str, *,
    context_window_size: int, provider: str | None, default_command_timeout_ms: int,
    options: dict[str, Any] | None = None,
) -> ProviderProfile:
    """A profile whose tools travel as the provider's native calls (openai, anthropic, gemini):
    the shared compact prompt, parallel calls on."""
    return ProviderProfile(
        id=profile_id,
        model=model,
        tool_registry=ToolRegistry.of(tools),
        base_instructions=base_instructions,
        compact_instructions=prompts.NATIVE_COMPACT,
        provider=provider,
        supports_parallel_tool_calls=True,
        context_window_size=context_window_size,
        default_command_timeout_ms=default_command_timeout_ms,
        options=options or {},
    )


def create_openai_profile(
    model: str = "gpt-5.2-codex", *, context_window_size: int = 400_000, provider: str | None = None
) -> ProviderProfile:
    """Codex-aligned: read_file, apply_patch, write_file, shell (10 s), grep, glob; parallel calls on."""
    return native_profile(
        "openai", model, openai_tools(), prompts.OPENAI, context_window_size=context_window_size,
        provider=provider, default_command_timeout_ms=OPENAI_SHELL_TIMEOUT_MS,
    )


def create_anthropic_profile(
    model: str = "claude-sonnet-4-5", *, context_window_size: int = 200_000, provider: str | None = None,
    beta_headers: list[str] | None = None,
) -> ProviderProfile:
    """Claude Code-aligned: read_file, write_file, edit_file (old_string/new_string), shell (120 s),
    grep, glob; ``beta_headers`` go to ``provider_options.anthropic.beta_headers`` (§3.5)."""
    return native_profile(
        "anthropic", model, anthropic_tools(), prompts.ANTHROPIC, context_window_size=context_window_size,
        provider=provider, default_command_timeout_ms=ANTHROPIC_SHELL_TIMEOUT_MS,
        options={"anthropic": {"beta_headers": list(beta_headers)}} if beta_headers else None,
    )


def create_gemini_profile(
    model: str = "gemini-2.5-pro", *, context_window_size: int = 1_000_000, provider: str | None = None,
    safety_settings: list[dict[str, Any]] | None = None,
) -> ProviderProfile:
    """gemini-cli-aligned: core tools plus read_many_files and list_dir, shell 10 s;
    ``safety_settings`` go to ``provider_options.gemini`` (§3.6)."""
    return native_profile(
        "gemini", model, gemini_tools(), prompts.GEMINI, context_window_size=context_window_size,
        provider=provider, default_command_timeout_ms=OPENAI_SHELL_TIMEOUT_MS,
        options={"gemini": {"safety_settings": safety_settings}} if safety_settings else None,
    )
