"""Model catalog of unified-llm spec §2.9."""

from __future__ import annotations

import pytest

from codeloop.llm.catalog import get_latest_model, get_model_info, list_models
from codeloop.llm.errors import ConfigurationError


def test_2_9_lookup_by_id_and_alias() -> None:
    info = get_model_info("claude-sonnet-4-5")
    assert info is not None and info.provider == "anthropic" and info.context_window == 200000
    assert get_model_info("sonnet") == info
    assert get_model_info("no-such-model") is None


def test_2_9_list_filters_by_provider_and_has_spec_models() -> None:
    ids = {m.id for m in list_models("openai")}
    assert {"gpt-5.2", "gpt-5.2-mini", "gpt-5.2-codex"} <= ids
    assert all(m.provider == "gemini" for m in list_models("gemini"))
    assert len(list_models()) >= len(list_models("openai")) + len(list_models("anthropic"))


def test_2_9_latest_model_prefers_the_spec_top_models() -> None:
    assert get_latest_model("anthropic").id == "claude-opus-4-6"  # type: ignore[union-attr]
    assert get_latest_model("gemini", "reasoning").id == "gemini-3.1-pro-preview"  # type: ignore[union-attr]
    assert get_latest_model("llama_cpp", "vision") is None
    assert get_latest_model("nobody") is None
    with pytest.raises(ConfigurationError, match="unknown capability"):
        get_latest_model("openai", "telepathy")


def test_2_9_every_entry_is_consistent() -> None:
    seen: set[str] = set()
    for m in list_models():
        assert m.id not in seen and m.context_window > 0
        seen.add(m.id)
        for alias in m.aliases:
            assert alias not in seen
            seen.add(alias)
        assert (m.input_cost_per_million is None) == (m.output_cost_per_million is None)
