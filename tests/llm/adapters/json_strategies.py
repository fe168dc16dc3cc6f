"""Hypothesis strategies for provider JSON that is almost, but not quite, the documented shape.

Keys come mostly from the real wire vocabulary so generated values reach deep into the
parsers; values are any JSON, so every field can have the wrong type.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


def json_values(keys: list[str]) -> st.SearchStrategy[Any]:
    key = st.one_of(st.sampled_from(keys), st.text(max_size=4))
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=6))
    return st.recursive(
        scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(key, inner, max_size=4)),
        max_leaves=12,
    )


def json_events(types: list[str], keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON object whose ``type`` is usually a real event type."""
    key = st.one_of(st.sampled_from(keys), st.text(max_size=4))
    return st.builds(
        lambda kind, rest: {**rest, "type": kind},
        st.one_of(st.sampled_from(types), st.text(max_size=6)),
        st.dictionaries(key, json_values(keys), max_size=5),
    )


def mutated(doc: Any, keys: list[str]) -> st.SearchStrategy[Any]:
    """``doc`` (a valid wire document) with random subtrees replaced by arbitrary JSON.

    Each node keeps its shape three times out of four, so most examples are "valid except
    for one or two fields", which is what reaches the deep branches of a parser.
    """
    wild = json_values(keys)
    if isinstance(doc, dict):
        shaped: st.SearchStrategy[Any] = st.fixed_dictionaries({k: mutated(v, keys) for k, v in doc.items()})
    elif isinstance(doc, list):
        shaped = st.tuples(*(mutated(v, keys) for v in doc)).map(list)
    else:
        shaped = st.just(doc)
    return st.one_of(shaped, shaped, shaped, wild)
