"""``codeloop run --worktree`` and ``codeloop worktrees list|merge|remove`` (issue 21), end to end:
the real command against the loopback scripted model server, real git, real bubblewrap."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from chat_server import text_reply, tool_reply
from test_plan_headless_cli import tool_results
from test_run_cli import CODELOOP, isolated_env

from codeloop.environments.sandbox import probe_bwrap


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one commit on main; its own user, as a sandbox has no home config."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "agent@example.com")
    git(root, "config", "user.name", "agent")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "init")
    return root


def codeloop(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CODELOOP, *args, "--cwd", str(repo)], capture_output=True, text=True,
                          env=isolated_env(repo), timeout=120, stdin=subprocess.DEVNULL)


def run_agent(server, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return codeloop(repo, "run", "work", "--json", "--base-url", server.base_url, "--profile", "anthropic",
                    "--approval", "never-ask", *args)


def test_run_in_a_worktree_commits_under_bubblewrap_and_merges_back(server, repo: Path) -> None:
    if (why := probe_bwrap()) is not None:
        pytest.skip(f"bubblewrap cannot run here: {why}")
    server.replies.extend([
        tool_reply("shell", {"command": "pwd; echo b > b.txt && git add b.txt && git commit -qm 'add b' "
                                        "&& git log --oneline -1; "
                                        "echo hook >> \"$(git rev-parse --git-common-dir)/config\" || echo kept"}),
        text_reply("committed")])
    done = run_agent(server, repo, "--sandbox", "workspace-write", "--worktree=feat")
    assert done.returncode == 0, done.stderr
    worktree = repo / ".codeloop" / "worktrees" / "feat"
    assert "worktree feat" in done.stderr and "codeloop/feat" in done.stderr
    result = tool_results(server, 1)[0]
    assert str(worktree) in result and "add b" in result and "exit code: 0" in result, result
    # Writable only where a commit writes: the repository's config stays read-only.
    assert "Read-only file system" in result and "kept" in result and "hook" not in (repo / ".git/config").read_text()
    assert git(repo, "log", "--format=%s", "-1", "codeloop/feat").strip() == "add b"
    assert not (repo / "b.txt").exists() and git(repo, "status", "--short") == ""
    listed = codeloop(repo, "worktrees", "list")
    assert listed.returncode == 0 and "feat\tcodeloop/feat\tclean" in listed.stdout
    merged = codeloop(repo, "worktrees", "merge", "feat")
    assert merged.returncode == 0, merged.stderr
    assert (repo / "b.txt").read_text() == "b\n" and git(repo, "branch", "--show-current").strip() == "main"
    removed = codeloop(repo, "worktrees", "remove", "feat")
    assert removed.returncode == 0, removed.stderr
    assert not worktree.exists() and "codeloop/feat" not in git(repo, "branch", "--list")


def test_merge_conflict_names_the_files_and_changes_nothing(server, repo: Path) -> None:
    server.replies.extend([
        tool_reply("shell", {"command": "echo theirs > a.txt && git commit -qam theirs"}), text_reply("done")])
    assert run_agent(server, repo, "--sandbox", "off", "--worktree=clash").returncode == 0
    (repo / "a.txt").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    merged = codeloop(repo, "worktrees", "merge", "clash")
    assert merged.returncode == 1
    assert "conflicts in a.txt" in merged.stderr and "nothing changed" in merged.stderr
    assert "Traceback" not in merged.stderr
    assert (repo / "a.txt").read_text() == "ours\n" and git(repo, "status", "--short") == ""


def test_remove_refuses_uncommitted_changes_unless_forced(server, repo: Path) -> None:
    server.replies.extend([tool_reply("shell", {"command": "echo draft > draft.txt"}), text_reply("drafted")])
    done = run_agent(server, repo, "--sandbox", "off", "--worktree")  # no NAME: one is made up
    assert done.returncode == 0, done.stderr
    (name, branch, state, path), = (line.split("\t") for line in codeloop(repo, "worktrees", "list")
                                    .stdout.splitlines())
    assert name.startswith("run-") and branch == f"codeloop/{name}" and state == "uncommitted changes"
    refused = codeloop(repo, "worktrees", "remove", name)
    assert refused.returncode == 1 and "uncommitted changes" in refused.stderr and "--force" in refused.stderr
    assert (Path(path) / "draft.txt").exists()
    forced = codeloop(repo, "worktrees", "remove", name, "--force")
    assert forced.returncode == 0, forced.stderr
    assert not Path(path).exists() and branch not in git(repo, "branch", "--list")


@pytest.mark.parametrize(("args", "needle"), [
    (["run", "x", "--worktree=a b"], "worktree name 'a b'"),
    (["worktrees", "merge", "nope"], "no codeloop worktree 'nope'"),
])
def test_worktree_errors_are_one_clear_line(repo: Path, args: list[str], needle: str) -> None:
    done = codeloop(repo, *args)
    assert done.returncode in (1, 2) and needle in done.stderr and "Traceback" not in done.stderr


def test_worktree_outside_a_repository_is_a_usage_error(tmp_path: Path) -> None:
    done = codeloop(tmp_path, "run", "x", "--worktree=w")
    assert done.returncode == 2 and "is not in a git repository" in done.stderr and "git init" in done.stderr
