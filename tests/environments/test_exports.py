"""codeloop.environments exports exactly its public API (STYLE.md §5)."""

from __future__ import annotations

import codeloop.environments as environments


def test_all_names_exist_and_are_sorted() -> None:
    assert environments.__all__ == sorted(environments.__all__)
    for name in environments.__all__:
        assert getattr(environments, name) is not None


def test_every_public_attribute_is_in_all() -> None:
    public = {
        name for name, value in vars(environments).items()
        if not name.startswith("_") and not isinstance(value, type(environments))
    }
    assert public == set(environments.__all__)
