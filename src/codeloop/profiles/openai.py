"""The OpenAI profile (loop spec §3.4): codex-aligned tools, apply_patch, 10 s shell."""

from __future__ import annotations

from codeloop.profiles import prompts
from codeloop.profiles.base import ProviderProfile, native_profile
from codeloop.tools.sets import openai_tools
from codeloop.tools.shell import OPENAI_SHELL_TIMEOUT_MS


def create_openai_profile(
    model: str = "gpt-5.2-codex", *, context_window_size: int = 400_000, provider: str | None = None
) -> ProviderProfile:
    """read_file, apply_patch, write_file, shell (10 s), grep, glob; parallel calls on."""
    return native_profile(
        "openai", model, openai_tools(), prompts.OPENAI, context_window_size=context_window_size,
        provider=provider, default_command_timeout_ms=OPENAI_SHELL_TIMEOUT_MS,
    )
