"""The public API: every name in ``codeloop.__all__`` resolves, and import is inert."""

from __future__ import annotations

import subprocess
import sys

import codeloop


def test_every_exported_name_resolves_to_a_public_object() -> None:
    for name in codeloop.__all__:
        value = getattr(codeloop, name)
        assert value is not None, name
        assert not name.startswith("_")


def test_all_is_sorted_and_unique() -> None:
    assert codeloop.__all__ == sorted(set(codeloop.__all__))


def test_unknown_names_raise_attribute_error() -> None:
    try:
        codeloop.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_loads_no_subpackage_and_prints_nothing() -> None:
    code = "import sys, codeloop; print(sorted(m for m in sys.modules if m.startswith('codeloop')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['codeloop']"
    assert done.stderr == ""


def test_tool_result_is_a_deprecated_alias_of_tool_call_outcome() -> None:
    import pytest

    from codeloop.tools import ToolCallOutcome

    with pytest.warns(DeprecationWarning, match="codeloop.ToolCallOutcome"):
        assert codeloop.ToolResult is ToolCallOutcome
    assert "ToolResult" not in codeloop.__all__
