"""The Anthropic profile (loop spec §3.5): Claude Code-aligned tools, edit_file, 120 s shell."""

from __future__ import annotations

from codeloop.profiles import prompts
from codeloop.profiles.base import ProviderProfile, native_profile
from codeloop.tools.sets import anthropic_tools
from codeloop.tools.shell import ANTHROPIC_SHELL_TIMEOUT_MS


def create_anthropic_profile(
    model: str = "claude-sonnet-4-5", *, context_window_size: int = 200_000, provider: str | None = None,
    beta_headers: list[str] | None = None,
) -> ProviderProfile:
    """read_file, write_file, edit_file (old_string/new_string), shell (120 s), grep, glob;
    ``beta_headers`` go to ``provider_options.anthropic.beta_headers`` (§3.5)."""
    return native_profile(
        "anthropic", model, anthropic_tools(), prompts.ANTHROPIC, context_window_size=context_window_size,
        provider=provider, default_command_timeout_ms=ANTHROPIC_SHELL_TIMEOUT_MS,
        options={"anthropic": {"beta_headers": list(beta_headers)}} if beta_headers else None,
    )
