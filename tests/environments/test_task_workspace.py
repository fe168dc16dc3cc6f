"""A batch task's workspace (environments/task_workspace.py): made from its source, its patch
against the start, and that patch replayed on a fresh copy (a task retried on another node)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codeloop.environments.task_workspace import (
    TaskDirs,
    TaskWorkspaceError,
    WorkspaceSource,
    apply_patch,
    prepare_workspace,
    workspace_patch,
)

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


async def test_a_patch_replayed_on_a_fresh_workspace_gives_the_same_files(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "a.py").write_text("x = 1\n")
    (source / "gone.txt").write_text("bye\n")
    (source / "blob.bin").write_bytes(bytes(range(256)))
    first = TaskDirs(tmp_path / "node1" / "t")
    await prepare_workspace(first, WorkspaceSource(directory=source))
    assert await workspace_patch(first) == ""
    ws = first.workspace
    (ws / "pkg" / "a.py").write_text("x = 2\n")
    (ws / "gone.txt").unlink()
    (ws / "blob.bin").write_bytes(bytes(reversed(range(256))))
    (ws / "new dir").mkdir()
    (ws / "new dir" / "n.txt").write_text("new\n")
    patch = await workspace_patch(first)
    assert "GIT binary patch" in patch and "deleted file mode" in patch
    second = TaskDirs(tmp_path / "node2" / "t")
    await prepare_workspace(second, WorkspaceSource(directory=source))
    await apply_patch(second, patch)
    assert tree(second.workspace) == tree(ws)
    assert tree(source)["gone.txt"] == b"bye\n"  # the source is never touched
    assert not (ws / ".git").exists()


async def test_a_git_source_is_checked_out_at_its_revision_and_keeps_its_own_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    (repo / "f.txt").write_text("v1\n")
    subprocess.run([*GIT, "add", "."], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "one"], cwd=repo, check=True)
    (repo / "f.txt").write_text("v2\n")
    subprocess.run([*GIT, "commit", "-qam", "two"], cwd=repo, check=True)
    dirs = TaskDirs(tmp_path / "work" / "t")
    await prepare_workspace(dirs, WorkspaceSource(git=str(repo), revision="HEAD~1"))
    assert (dirs.workspace / "f.txt").read_text() == "v1\n"
    assert (dirs.workspace / ".git").is_dir()  # the clone's own history stays the agent's
    (dirs.workspace / "f.txt").write_text("v3\n")
    patch = await workspace_patch(dirs)
    assert "-v1" in patch and "+v3" in patch and ".git/" not in patch


async def test_a_prepared_workspace_is_kept_and_a_half_made_one_is_made_again(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.txt").write_text("a\n")
    dirs = TaskDirs(tmp_path / "work" / "t")
    await prepare_workspace(dirs, WorkspaceSource(directory=source))
    (dirs.workspace / "work.txt").write_text("done so far\n")
    await prepare_workspace(dirs, WorkspaceSource(directory=source))  # a restart: kept as it is
    assert (dirs.workspace / "work.txt").exists()
    (dirs.root / "prepared").unlink()  # as if killed while copying
    await prepare_workspace(dirs, WorkspaceSource(directory=source))
    assert tree(dirs.workspace) == {"a.txt": b"a\n"}


@pytest.mark.parametrize("source", [WorkspaceSource(git="/nonexistent/repo"),
                                    WorkspaceSource(directory=Path("/nonexistent/dir"))])
async def test_a_source_that_cannot_be_had_is_one_line_naming_it(tmp_path: Path, source: WorkspaceSource) -> None:
    with pytest.raises(TaskWorkspaceError, match="nonexistent") as caught:
        await prepare_workspace(TaskDirs(tmp_path / "t"), source)
    assert "\n" not in str(caught.value)
