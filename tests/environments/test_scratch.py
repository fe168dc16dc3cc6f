"""The scratch workspace of issue 33: a candidate's files and whatever its checks write land in
an overlay, never in the user's files. Real bubblewrap; the overlay needs 0.10 or later, so
the tests that run commands are skipped, saying so, where the installed one is older."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from codeloop.environments.errors import PathOutsideWorkspaceError, SandboxUnavailableError, WriteDeniedError
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.environments.sandbox import find_bwrap, supports_overlay
from codeloop.environments.scratch import ScratchExecutionEnvironment

BWRAP = find_bwrap()
overlay = pytest.mark.skipif(BWRAP is None or not supports_overlay(BWRAP),
                             reason=f"bubblewrap {BWRAP} has no --overlay (needs 0.10 or later)")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "stats.py").write_text("def last_n(xs, n):\n    return xs[-n - 1:]\n")
    (ws / "old.py").write_text("x = 1\n")
    (ws / "test_stats.py").write_text("from stats import last_n\nassert last_n([1, 2, 3], 2) == [2, 3]\nprint('ok')\n")
    return ws


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@overlay
async def test_a_staged_candidate_is_what_commands_see_and_the_workspace_is_untouched(workspace: Path) -> None:
    before = snapshot(workspace)
    env = ScratchExecutionEnvironment(workspace)
    await env.initialize()
    try:
        failing = await env.exec_command("python3 test_stats.py")
        assert failing.exit_code != 0
        await env.stage({"stats.py": "def last_n(xs, n):\n    return xs[-n:]\n", "old.py": None, "pkg/new.py": "y = 2\n"})
        passing = await env.exec_command("python3 test_stats.py && ls old.py; cat pkg/new.py; echo made > out.txt")
        assert passing.stdout.startswith("ok\n") and "y = 2" in passing.stdout
        assert "No such file" in passing.stderr  # old.py is gone in the overlay
        assert (await env.exec_command("cat out.txt")).stdout == "made\n"  # writes persist between checks
        with pytest.raises(WriteDeniedError, match="a scratch workspace takes a candidate's files through stage"):
            await env.write_file("stats.py", "broken")
        with pytest.raises(PathOutsideWorkspaceError):
            await env.stage({"../escape.py": "x"})
    finally:
        await env.cleanup()
    assert snapshot(workspace) == before  # nothing written, nothing deleted, no __pycache__
    assert not (workspace.parent / "escape.py").exists()
    assert not env.upper.exists()  # the scratch space went with cleanup


@overlay
async def test_network_is_off_in_the_scratch_workspace(workspace: Path) -> None:
    """A server listening on the host's loopback cannot be reached from a check."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\""
        host = await LocalExecutionEnvironment(workspace).exec_command(probe)
        env = ScratchExecutionEnvironment(workspace)
        await env.initialize()
        try:
            inside = await env.exec_command(probe)
        finally:
            await env.cleanup()
    assert host.exit_code == 0 and inside.exit_code != 0
    assert "ConnectionRefusedError" in inside.stderr or "OSError" in inside.stderr


async def test_an_old_bubblewrap_is_refused_with_the_fix(workspace: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A bwrap without --overlay (a real one whose --help lacks it) is refused, never run without."""
    real = shutil.which("bwrap")
    if real is None:
        pytest.skip("bubblewrap is not installed")
    fake_dir = tmp_path / "bin"
    fake_dir.mkdir()
    fake = fake_dir / "bwrap"
    # The real bwrap for the probe, a help text without --overlay for the feature check.
    fake.write_text(f'#!/bin/sh\nif [ "$1" = --help ]; then echo "usage: bwrap [OPTIONS]"; exit 0; fi\nexec {real} "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_dir}:/usr/bin:/bin")
    env = ScratchExecutionEnvironment(workspace)
    try:
        with pytest.raises(SandboxUnavailableError, match=r"needs bubblewrap 0\.10 or later \(its --overlay\)"):
            await env.initialize()
    finally:
        await env.cleanup()
