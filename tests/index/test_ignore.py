"""Walking a repository with .gitignore files (the rules are codeloop.environments.patterns')."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.index.ignore import walk_repository


def _tree(root: Path, files: dict[str, str]) -> set[str]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return {rel for rel, _ in walk_repository(str(root))}


def test_nested_gitignore_applies_below_its_directory(tmp_path: Path) -> None:
    found = _tree(tmp_path, {"sub/.gitignore": "*.tmp\n", "sub/a.tmp": "x", "b.tmp": "x", "sub/keep.py": "x",
                             ".git/config": "x", "node_modules/m/index.js": "x"})
    assert found == {"b.tmp", "sub/.gitignore", "sub/keep.py"}


def test_directory_pattern_negation_and_anchoring(tmp_path: Path) -> None:
    found = _tree(tmp_path, {".gitignore": "out/\n*.log\n!keep.log\n/root.txt\n", "out/a.py": "x",
                             "src/out/b.py": "x", "a.log": "x", "keep.log": "x", "root.txt": "x",
                             "src/root.txt": "x"})
    assert found == {".gitignore", "keep.log", "src/root.txt"}


def test_git_info_exclude_is_respected(tmp_path: Path) -> None:
    found = _tree(tmp_path, {".git/info/exclude": "private.txt\n", "private.txt": "x", "public.txt": "x"})
    assert found == {"public.txt"}


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_any_gitignore_text_never_breaks_the_walk(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        found = _tree(Path(tmp), {".gitignore": text, "a/b.py": "x"})
    assert found <= {".gitignore", "a/b.py"}
