"""Glob patterns and .gitignore rules (loop spec §3.3 glob; DESIGN.md "Search")."""

from __future__ import annotations

import fnmatch
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.environments.errors import InvalidPatternError
from codeloop.environments.patterns import compile_glob, is_ignored, parse_ignore_file


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/pkg/a.py", True),
        ("src/**", "src/a/b.txt", True),
        ("src/**/test_*.py", "src/test_x.py", True),
        ("src/**/test_*.py", "src/a/b/test_x.py", True),
        ("?.md", "a.md", True),
        ("?.md", "/.md", False),
        ("[abc].txt", "b.txt", True),
        ("[!abc].txt", "d.txt", True),
        ("[!abc].txt", "a.txt", False),
        ("**/*.{ts,tsx}", "ui/app.tsx", True),
        ("**/*.{ts,tsx}", "ui/app.js", False),
        ("a\\*b", "a*b", True),
        ("a\\*b", "axb", False),
        ("[unclosed", "[unclosed", True),
        ("{a.txt}", "a.txt", True),
        ("{}a.txt", "a.txt", True),
        ("{a,b/**}/x", "b/c/d/x", True),
        ("[{]x[}]", "{x}", True),
    ],
)
def test_glob_semantics(pattern: str, path: str, matches: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is matches


@pytest.mark.parametrize("pattern", ["", "[z-a]", "a\x00b", "a{b", "a}.txt", "{a,{b}"])
def test_invalid_globs_raise_invalid_pattern_error_naming_the_pattern(pattern: str) -> None:
    with pytest.raises(InvalidPatternError) as info:
        compile_glob(pattern)
    assert repr(pattern) in str(info.value)


@given(st.text(max_size=40))
def test_property_any_glob_compiles_or_raises_invalid_pattern(pattern: str) -> None:
    try:
        regex = compile_glob(pattern)
    except InvalidPatternError:
        return
    assert isinstance(regex, re.Pattern)


@given(st.text(alphabet="abc.-_", min_size=1, max_size=8), st.text(alphabet="abc.-_", min_size=1, max_size=8))
def test_property_star_never_crosses_a_slash(name: str, other: str) -> None:
    assert compile_glob("*").match(name)
    assert not compile_glob("*").match(f"{name}/{other}")


@given(st.text(alphabet="ab*?.", min_size=1, max_size=8), st.text(alphabet="ab.", max_size=8))
def test_property_single_component_agrees_with_fnmatch(pattern: str, name: str) -> None:
    """Without '/', '[' or '**' our globs mean what fnmatch means."""
    pattern = pattern.replace("**", "*")
    assert bool(compile_glob(pattern).match(name)) == fnmatch.fnmatchcase(name, pattern)


def test_gitignore_rules() -> None:
    rules = parse_ignore_file("# comment\n\n*.log\n/build\ndocs/*.tmp\nout/\n!keep.log\n", "")
    assert is_ignored(rules, "debug.log", False)
    assert is_ignored(rules, "src/deep/debug.log", False)
    assert not is_ignored(rules, "keep.log", False)
    assert is_ignored(rules, "build", True)
    assert not is_ignored(rules, "src/build", True)
    assert is_ignored(rules, "docs/a.tmp", False)
    assert not is_ignored(rules, "docs/sub/a.tmp", False)
    assert is_ignored(rules, "out", True) and not is_ignored(rules, "out", False)


def test_nested_gitignore_applies_below_its_directory() -> None:
    rules = parse_ignore_file("*.gen\n/local\n", "pkg")
    assert is_ignored(rules, "pkg/a.gen", False)
    assert not is_ignored(rules, "a.gen", False)
    assert is_ignored(rules, "pkg/local", True)
    assert not is_ignored(rules, "pkg/sub/local", True)


@given(st.text(max_size=200))
def test_property_any_ignore_file_parses(text: str) -> None:
    for rule in parse_ignore_file(text, ""):
        is_ignored([rule], "a/b.txt", False)
