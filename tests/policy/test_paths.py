"""Filesystem policy decisions and path globs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.policy import FilesystemPolicy, evaluate_path
from codeloop.policy.paths import glob_regex, matches


@pytest.mark.parametrize(
    ("path", "glob", "hit"),
    [
        (".env", ".env", True),
        ("conf/.env", ".env", True),
        ("src/a.py", "src/**", True),
        ("src", "src/**", True),
        ("srcx/a.py", "src/**", False),
        ("a/b/c.pem", "*.pem", True),
        ("a/b.py", "*.py", True),
        ("a/b.py", "a/*.py", True),
        ("a/x/b.py", "a/*.py", False),
        ("./src//a.py", "src/**", True),
        (".git/hooks/pre-commit", ".git/hooks/**", True),
    ],
)
def test_glob_matching(path: str, glob: str, hit: bool) -> None:
    assert (matches(path, (glob,)) is not None) == hit


def test_read_only_allows_reads_and_refuses_writes() -> None:
    policy = FilesystemPolicy(read_only=True)
    assert evaluate_path("a.txt", "read", policy).action == "allow"
    d = evaluate_path("a.txt", "write", policy)
    assert (d.action, d.rule) == ("deny", "filesystem.readOnly")
    assert evaluate_path("a.txt", "delete", policy).action == "deny"


def test_allowed_blocked_and_approval_paths() -> None:
    policy = FilesystemPolicy(allowed_paths=("src/**",), blocked_paths=("src/secret/**",),
                              approval_paths=("src/migrations/**",))
    assert evaluate_path("src/a.py", "write", policy).action == "allow"
    assert evaluate_path("docs/a.md", "read", policy).rule == "filesystem.allowedPaths"
    assert evaluate_path("src/secret/k", "read", policy).rule == "filesystem.blockedPaths"
    assert evaluate_path("src/migrations/1.sql", "write", policy).action == "ask"
    assert evaluate_path("src/migrations/1.sql", "read", policy).action == "allow"


def test_max_file_size_and_disabled() -> None:
    assert evaluate_path("a", "write", FilesystemPolicy(max_file_size=3), size=4).rule == "filesystem.maxFileSize"
    assert evaluate_path("a", "read", FilesystemPolicy(enabled=False)).action == "deny"


@given(st.text(max_size=20), st.text(max_size=30))
def test_any_glob_compiles_and_matching_never_raises(glob: str, path: str) -> None:
    glob_regex(glob)
    matches(path, (glob,))
