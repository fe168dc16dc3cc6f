"""Provider profiles (loop spec §3): tools and system prompts per model family."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from codeloop.profiles.base import (
    ProviderProfile,
    create_anthropic_profile,
    create_gemini_profile,
    create_openai_profile,
)
from codeloop.profiles.text import TextProfile, create_text_profile

_FACTORIES: dict[str, Callable[..., ProviderProfile]] = {
    "openai": create_openai_profile,
    "anthropic": create_anthropic_profile,
    "gemini": create_gemini_profile,
    "text": create_text_profile,
}
PROFILE_IDS = tuple(_FACTORIES)
"""Profiles ``create_profile`` knows."""


def create_profile(profile_id: str, model: str | None = None, **options: Any) -> ProviderProfile:
    """The profile ``profile_id`` for ``model`` (its default model when None).

    Raises ValueError naming the known profiles for an unknown id."""
    if profile_id not in _FACTORIES:
        raise ValueError(f"unknown profile {profile_id!r}: use one of {', '.join(PROFILE_IDS)}")
    if model:
        options["model"] = model
    return _FACTORIES[profile_id](**options)


__all__ = [
    "PROFILE_IDS",
    "ProviderProfile",
    "TextProfile",
    "create_anthropic_profile",
    "create_gemini_profile",
    "create_openai_profile",
    "create_profile",
    "create_text_profile",
]
