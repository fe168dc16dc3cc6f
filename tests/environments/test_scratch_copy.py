"""The scratch workspace where bubblewrap has no overlay (issue 33): a plain temporary copy,
commands sandboxed over it, the user's files untouched, version control and caches left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.environments import scratch
from codeloop.environments.errors import WorkspaceError
from codeloop.environments.sandbox import find_bwrap, probe_bwrap
from codeloop.environments.scratch import CopiedScratchEnvironment, copy_workspace

SANDBOX = find_bwrap() is not None and probe_bwrap() is None


def test_the_copy_leaves_out_version_control_caches_and_links(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / ".git").mkdir(parents=True)
    (src / ".git" / "HEAD").write_text("ref")
    (src / "pkg" / "__pycache__").mkdir(parents=True)
    (src / "pkg" / "__pycache__" / "a.pyc").write_bytes(b"x")
    (src / "pkg" / "a.py").write_text("A = 1\n")
    (src / "link.py").symlink_to("/etc/passwd")
    copy_workspace(src, dst)
    assert sorted(str(p.relative_to(dst)) for p in dst.rglob("*")) == ["pkg", "pkg/a.py"]


def test_a_workspace_over_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scratch, "COPY_LIMIT_BYTES", 10)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "big.txt").write_text("x" * 11)
    with pytest.raises(WorkspaceError, match="too large to copy"):
        copy_workspace(tmp_path / "src", tmp_path / "dst")


@pytest.mark.skipif(not SANDBOX, reason="bubblewrap cannot run a sandbox here")
async def test_staged_files_and_command_writes_stay_in_the_copy(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    ws = tmp_path / "ws"
    (ws / "stats.py").write_text("N = 1\n")
    (ws / "old.py").write_text("gone = True\n")
    env = CopiedScratchEnvironment(ws)
    await env.initialize()
    try:
        await env.stage({"stats.py": "N = 2\n", "old.py": None})
        done = await env.exec_command("cat stats.py; ls; echo more > stats.py; touch new.txt")
        assert done.exit_code == 0
        assert done.stdout.startswith("N = 2\nstats.py\n")
        assert "old.py" not in done.stdout
    finally:
        await env.cleanup()
    assert sorted(p.name for p in ws.iterdir()) == ["old.py", "stats.py"]
    assert (ws / "stats.py").read_text() == "N = 1\n"
    assert not env.copy.exists()
