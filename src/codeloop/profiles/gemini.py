"""The Gemini profile (loop spec §3.6): gemini-cli-aligned tools, read_many_files, list_dir, 10 s shell."""

from __future__ import annotations

from typing import Any

from codeloop.profiles import prompts
from codeloop.profiles.base import ProviderProfile, native_profile
from codeloop.tools.sets import gemini_tools
from codeloop.tools.shell import OPENAI_SHELL_TIMEOUT_MS


def create_gemini_profile(
    model: str = "gemini-2.5-pro", *, context_window_size: int = 1_000_000, provider: str | None = None,
    safety_settings: list[dict[str, Any]] | None = None,
) -> ProviderProfile:
    """Core tools plus read_many_files and list_dir, shell 10 s; ``safety_settings`` go to
    ``provider_options.gemini`` (§3.6)."""
    return native_profile(
        "gemini", model, gemini_tools(), prompts.GEMINI, context_window_size=context_window_size,
        provider=provider, default_command_timeout_ms=OPENAI_SHELL_TIMEOUT_MS,
        options={"gemini": {"safety_settings": safety_settings}} if safety_settings else None,
    )
