"""The pure parts of the applier: codex's search passes and splicing."""

from __future__ import annotations

import pytest

from codeloop.tools.errors import PatchError
from codeloop.tools.patch_apply import apply_replacements, compute_replacements
from codeloop.tools.patch_parser import UpdateChunk


def _apply(lines: list[str], *chunks: UpdateChunk) -> list[str]:
    return apply_replacements(lines, compute_replacements(lines, "f", chunks))


def test_a_exact_before_fuzzy_passes() -> None:
    lines = ["  foo", "foo"]
    assert _apply(lines, UpdateChunk(None, ("foo",), ("bar",))) == ["  foo", "bar"]


def test_a_trim_end_pass() -> None:
    assert _apply(["foo   ", "x"], UpdateChunk(None, ("foo",), ("bar",))) == ["bar", "x"]


def test_a_trim_pass() -> None:
    assert _apply(["    foo\t", "x"], UpdateChunk(None, ("foo",), ("bar",))) == ["bar", "x"]


def test_a_unicode_normalised_pass() -> None:
    lines = ["import asyncio  # local import \u2013 avoids top\u2011level dep"]
    chunk = UpdateChunk(None, ("import asyncio  # local import - avoids top-level dep",), ("x",))
    assert _apply(lines, chunk) == ["x"]


def test_a_chunks_are_searched_in_order() -> None:
    lines = ["a", "b", "a", "b"]
    out = _apply(lines, UpdateChunk(None, ("b",), ("B1",)), UpdateChunk(None, ("a", "b"), ("A", "B2")))
    assert out == ["a", "B1", "A", "B2"]


def test_a_pure_addition_goes_to_the_end_like_codex() -> None:
    lines = ["line1", "line2", "line3"]
    out = _apply(
        lines,
        UpdateChunk(None, (), ("after-context", "second-line")),
        UpdateChunk(None, ("line1", "line2", "line3"), ("line1", "line2-replacement")),
    )
    assert out == ["line1", "line2-replacement", "after-context", "second-line"]


def test_a_trailing_empty_old_line_is_retried_without_it() -> None:
    assert _apply(["a", "b"], UpdateChunk(None, ("b", ""), ("c", ""))) == ["a", "c"]


def test_a_not_found_message() -> None:
    with pytest.raises(PatchError, match="Failed to find expected lines in f:\nzz"):
        compute_replacements(["a"], "f", [UpdateChunk(None, ("zz",), ())])
