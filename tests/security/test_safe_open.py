"""One safe open (issue 22, classes 2-4): FIFOs, hard links and swapped links on every read path.

A FIFO nobody writes to blocks a plain ``open`` forever; each case has a few seconds of
``pytest-timeout`` and must answer with an error (or skip the FIFO) at once. A hard link to
an outside file must not show its content through ``grep`` (``rg`` and the pure-Python
fallback, directory walk and explicit path) or the code index. Deletes race a directory
swapped for a link, and so does ``grep`` of an explicit path, a bounded number of times here
(``benchmarks/delete_race.py`` runs 100,000).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeloop.environments import GrepOptions, LocalExecutionEnvironment
from codeloop.environments.errors import NotAFileError, PathOutsideWorkspaceError
from codeloop.index.code_index import CodeIndex
from codeloop.tools import execute_tool_call
from codeloop.tools.sets import all_tools_registry

from .race_harness import HARMLESS, run_delete_race, run_grep_race

SECRET = "OUTSIDE-SECRET-CONTENT"
FAST = pytest.mark.timeout(10)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """``ws`` with a FIFO ``pipe``, a hard link ``linked.txt`` to ``outside/secret.txt``,
    and an ordinary ``ok.txt``; the FIFO and the link are found by a directory walk."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    os.link(outside / "secret.txt", ws / "linked.txt")
    os.mkfifo(ws / "pipe")
    (ws / "sub").mkdir()
    os.mkfifo(ws / "sub" / "pipe.py")
    (ws / "ok.txt").write_text(f"fine {SECRET[:7]}\n")
    return ws, outside


@pytest.fixture(params=["rg", "python"])
def env(request: pytest.FixtureRequest, layout: tuple[Path, Path]) -> LocalExecutionEnvironment:
    local = LocalExecutionEnvironment(layout[0])
    if request.param == "python":
        local.ripgrep = None
    return local


@FAST
async def test_read_file_on_a_fifo_is_refused_at_once(env: LocalExecutionEnvironment) -> None:
    with pytest.raises(NotAFileError, match="FIFO"):
        await env.read_file("pipe")
    with pytest.raises(NotAFileError, match="not a regular file"):
        await env.read_bytes("sub/pipe.py")


@FAST
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"file_path": "pipe"}),
        ("edit_file", {"file_path": "pipe", "old_string": "a", "new_string": "b"}),
        ("grep", {"pattern": "x", "path": "pipe"}),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: pipe\n@@\n-a\n+b\n*** End Patch"}),
    ],
)
async def test_file_tools_on_a_fifo_answer_with_an_error(env: LocalExecutionEnvironment, tool: str,
                                                         args: dict[str, object]) -> None:
    result = await execute_tool_call(all_tools_registry(), tool, args, env)
    assert result.is_error, result.output
    assert "pipe" in result.output


@FAST
async def test_grep_over_a_directory_with_fifos_skips_them(env: LocalExecutionEnvironment) -> None:
    found = await env.grep("fine", ".", GrepOptions(output_mode="files_with_matches"))
    assert found == "ok.txt"


@FAST
@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
async def test_grep_never_shows_a_hard_linked_outside_file(env: LocalExecutionEnvironment, mode: str) -> None:
    found = await env.grep("SECRET", ".", GrepOptions(output_mode=mode))  # type: ignore[arg-type]
    assert SECRET not in found and "linked.txt" not in found
    with pytest.raises(PathOutsideWorkspaceError, match="hard link"):
        await env.grep("SECRET", "linked.txt", GrepOptions(output_mode=mode))  # type: ignore[arg-type]


@FAST
async def test_grep_still_shows_hard_links_when_allowed(env: LocalExecutionEnvironment) -> None:
    env.allow_hardlinks = True
    assert SECRET in await env.grep("SECRET", "linked.txt")
    assert "linked.txt" in await env.grep("SECRET", ".", GrepOptions(output_mode="files_with_matches"))


@FAST
async def test_grep_of_an_explicit_file_shows_its_workspace_path(env: LocalExecutionEnvironment) -> None:
    assert await env.grep("fine", "ok.txt") == "ok.txt:1:fine OUTSIDE\n".rstrip("\n")
    assert await env.grep("fine", "ok.txt", GrepOptions(output_mode="count")) == "ok.txt:1"


@FAST
def test_the_index_skips_fifos_and_hard_links(layout: tuple[Path, Path], tmp_path: Path) -> None:
    ws, _ = layout
    (ws / "code.py").write_text("def visible():\n    return 'fine'\n")
    (ws / "linked.py").hardlink_to(ws / "linked.txt")
    index = CodeIndex(ws, tmp_path / "index.db")
    index.build()
    assert sorted(index.files()) == ["code.py", "ok.txt"]
    assert index.search("SECRET") == []
    assert [hit.path for hit in index.search("OUTSIDE")] == ["ok.txt"]
    with pytest.raises(NotAFileError, match="FIFO"):
        index.ast("sub/pipe.py")
    with pytest.raises(PathOutsideWorkspaceError, match="hard link"):
        index.ast("linked.py")


async def test_delete_file_races_a_swapped_directory_without_a_leak(tmp_path: Path) -> None:
    env = LocalExecutionEnvironment(tmp_path / "ws")
    leaks, done = await run_delete_race(tmp_path, env.delete_file, iterations=3000)
    assert leaks == 0
    assert done > 0, "the harness never deleted the real file; it tests nothing"


@pytest.mark.parametrize("search", ["rg", "python"])
async def test_grep_of_an_explicit_path_races_a_swapped_directory_without_a_leak(tmp_path: Path,
                                                                                search: str) -> None:
    env = LocalExecutionEnvironment(tmp_path / "ws")
    if search == "python":
        env.ripgrep = None
    # The fallback's window (between its check and its read) is microseconds wide and a try
    # costs no process, so it gets more tries.
    leaks, shown = await run_grep_race(tmp_path, env.grep, iterations=3000 if search == "rg" else 20_000)
    assert leaks == 0
    assert shown > 0, f"no search ever showed {HARMLESS!r}; the harness tests nothing"


async def test_delete_file_removes_a_fifo_and_a_link_not_their_targets(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    (ws / "to_outside").symlink_to(outside / "secret.txt")
    env = LocalExecutionEnvironment(ws)
    await env.delete_file("pipe")
    await env.delete_file("to_outside")
    assert not (ws / "pipe").exists() and not (ws / "to_outside").is_symlink()
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"
