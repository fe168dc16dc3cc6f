"""The model catalog (unified-llm spec §2.9): advisory facts about known models.

Data lives in ``data/models.json`` (per provider, newest first) so it can be updated
without code changes. Unknown model ids are not an error anywhere: the catalog only helps
callers pick valid ids. Local models list the context size ``scripts/local-llm`` serves
with (``-c 8192``), not the model's trained maximum.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from codeloop.llm.errors import ConfigurationError

_CAPABILITIES = {"tools": "supports_tools", "vision": "supports_vision", "reasoning": "supports_reasoning"}


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One catalog entry (§2.9)."""

    id: str
    """The model's API identifier."""
    provider: str
    """Which provider serves it."""
    display_name: str
    """Human-readable name."""
    context_window: int
    """Maximum total tokens (input + output)."""
    max_output: int | None = None
    """Maximum output tokens, when known."""
    supports_tools: bool = False
    """Accepts tool definitions."""
    supports_vision: bool = False
    """Accepts image input."""
    supports_reasoning: bool = False
    """Produces reasoning tokens."""
    input_cost_per_million: float | None = None
    """USD per million input tokens, when verified."""
    output_cost_per_million: float | None = None
    """USD per million output tokens, when verified."""
    aliases: tuple[str, ...] = field(default_factory=tuple)
    """Shorthand names."""


@cache
def _models() -> tuple[ModelInfo, ...]:
    raw = json.loads(resources.files("codeloop.llm").joinpath("data/models.json").read_text("utf-8"))
    return tuple(ModelInfo(**{**m, "aliases": tuple(m.get("aliases", ()))}) for m in raw["models"])


def get_model_info(model_id: str) -> ModelInfo | None:
    """The entry whose id or alias is ``model_id``, or None when unknown."""
    for info in _models():
        if model_id == info.id or model_id in info.aliases:
            return info
    return None


def list_models(provider: str | None = None) -> list[ModelInfo]:
    """All known models, optionally only ``provider``'s, newest first per provider."""
    return [m for m in _models() if provider is None or m.provider == provider]


def get_latest_model(provider: str, capability: str | None = None) -> ModelInfo | None:
    """The newest model of ``provider``, optionally with ``capability`` (tools, vision, reasoning)."""
    if capability is not None and capability not in _CAPABILITIES:
        raise ConfigurationError(
            f"unknown capability {capability!r}; use one of {', '.join(sorted(_CAPABILITIES))}"
        )
    for info in list_models(provider):
        if capability is None or getattr(info, _CAPABILITIES[capability]):
            return info
    return None
