"""The .gitignore matcher (git's semantics for the common syntax) and its robustness."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.index.ignore import IgnoreMatcher, walk_repository


@pytest.mark.parametrize(("pattern", "path", "is_dir", "ignored"), [
    ("*.log", "a/b/x.log", False, True),
    ("*.log", "x.log.txt", False, False),
    ("/top.txt", "top.txt", False, True),
    ("/top.txt", "sub/top.txt", False, False),
    ("build/", "build", True, True),
    ("build/", "build", False, False),
    ("build/", "src/build/x.o", False, True),
    ("docs/*.md", "docs/a.md", False, True),
    ("docs/*.md", "docs/sub/a.md", False, False),
    ("**/cache", "a/b/cache", True, True),
    ("a/**/z", "a/b/c/z", False, True),
    ("a/**/z", "a/z", False, True),
    ("node?", "node1", False, True),
    ("[ab].txt", "b.txt", False, True),
    ("[!ab].txt", "b.txt", False, False),
    ("\\#hash", "#hash", False, True),
])
def test_gitignore_pattern(pattern: str, path: str, is_dir: bool, ignored: bool) -> None:
    assert IgnoreMatcher().with_file("", pattern).ignored(path, is_dir) is ignored


def test_negation_re_includes_and_order_matters() -> None:
    matcher = IgnoreMatcher().with_file("", "*.log\n!keep.log\n")
    assert matcher.ignored("a.log", False) and not matcher.ignored("keep.log", False)
    assert IgnoreMatcher().with_file("", "!keep.log\n*.log\n").ignored("keep.log", False)


def test_nested_gitignore_applies_below_its_directory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("*.tmp\n")
    (tmp_path / "sub" / "a.tmp").write_text("x")
    (tmp_path / "b.tmp").write_text("x")
    (tmp_path / "sub" / "keep.py").write_text("x")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("x")
    found = {rel for rel, _ in walk_repository(str(tmp_path))}
    assert found == {"b.tmp", "sub/.gitignore", "sub/keep.py"}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.text(alphabet="ab/.*!?[]\\# ", max_size=30), st.booleans())
def test_any_gitignore_text_parses_and_matches_without_error(text: str, path: str, is_dir: bool) -> None:
    result = IgnoreMatcher().with_file("", text).ignored(path.strip("/") or "a", is_dir)
    assert isinstance(result, bool)
