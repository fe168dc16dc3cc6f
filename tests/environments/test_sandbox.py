"""SandboxedExecutionEnvironment with the real bubblewrap (issue 4, loop spec §4.3, §8)."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest

from codeloop.environments.errors import SandboxUnavailableError, WriteDeniedError
from codeloop.environments.sandbox import SandboxedExecutionEnvironment, probe_bwrap

if probe_bwrap() is not None:  # pragma: no cover - depends on the host
    pytest.fail(f"bubblewrap must work for these tests: {probe_bwrap()} (run scripts/system-deps)")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def _connect_cmd(port: int) -> str:
    return (
        f"python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {port}), timeout=3); "
        "print(s.recv(4).decode())\""
    )


def _pids_with_marker(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and b"pgrep" not in cmdline:
            found.append(int(entry))
    return found


async def test_workspace_write_mode_writes_inside_but_not_outside(workspace: Path, tmp_path: Path) -> None:
    outside = Path.home() / f"codeloop-sbx-{uuid.uuid4().hex}.txt"
    env = SandboxedExecutionEnvironment(workspace, mode="workspace-write")
    await env.initialize()
    result = await env.exec_command(f"echo inside > a.txt; echo outside > {outside}; echo rc=$?")
    assert (workspace / "a.txt").read_text() == "inside\n"
    assert not outside.exists()
    assert "Read-only file system" in result.stderr


async def test_read_only_mode_blocks_shell_writes_to_the_workspace(workspace: Path) -> None:
    (workspace / "keep.txt").write_text("original")
    env = SandboxedExecutionEnvironment(workspace, mode="read-only")
    await env.initialize()
    result = await env.exec_command("echo changed > keep.txt; rm -f keep.txt; touch new.txt")
    assert result.exit_code != 0
    assert (workspace / "keep.txt").read_text() == "original"
    assert not (workspace / "new.txt").exists()


async def test_read_only_mode_refuses_file_tool_writes_before_touching_disk(workspace: Path) -> None:
    (workspace / "keep.txt").write_text("original")
    env = SandboxedExecutionEnvironment(workspace, mode="read-only")
    await env.initialize()
    with pytest.raises(WriteDeniedError, match="read-only"):
        await env.write_file("keep.txt", "changed")
    with pytest.raises(WriteDeniedError):
        await env.write_file("new/dir/file.txt", "x")
    with pytest.raises(WriteDeniedError):
        await env.delete_file("keep.txt")
    assert (workspace / "keep.txt").read_text() == "original"
    assert not (workspace / "new").exists()
    assert sorted(p.name for p in workspace.iterdir()) == ["keep.txt"]


async def test_private_tmp_is_writable_and_not_shared_with_the_host(workspace: Path) -> None:
    marker = f"codeloop-{uuid.uuid4().hex}"
    env = SandboxedExecutionEnvironment(workspace, mode="read-only")
    await env.initialize()
    result = await env.exec_command(f"echo hi > /tmp/{marker} && cat /tmp/{marker}")
    assert result.exit_code == 0 and result.stdout == "hi\n"
    assert not Path(f"/tmp/{marker}").exists()


async def test_hidden_secret_paths_cannot_be_read(workspace: Path) -> None:
    secrets = Path.home() / f".codeloop-test-secrets-{uuid.uuid4().hex}"
    secrets.mkdir()
    secret_file = Path.home() / f".codeloop-test-token-{uuid.uuid4().hex}"
    try:
        (secrets / "id_key").write_text("TOPSECRET-DIR")
        secret_file.write_text("TOPSECRET-FILE")
        env = SandboxedExecutionEnvironment(
            workspace, mode="workspace-write", hidden_paths=[str(secrets), str(secret_file)]
        )
        await env.initialize()
        result = await env.exec_command(f"cat {secrets}/id_key; cat {secret_file}; ls -A {secrets}")
        assert "TOPSECRET" not in result.output
    finally:
        (secrets / "id_key").unlink()
        secrets.rmdir()
        secret_file.unlink()


async def test_default_hidden_paths_cover_ssh_keys(workspace: Path) -> None:
    ssh_dir = Path.home() / ".ssh"
    created = not ssh_dir.exists()
    ssh_dir.mkdir(exist_ok=True)
    probe = ssh_dir / f"codeloop-probe-{uuid.uuid4().hex}"
    probe.write_text("PRIVATE KEY MATERIAL")
    try:
        env = SandboxedExecutionEnvironment(workspace)
        await env.initialize()
        result = await env.exec_command(f"cat {probe}")
        assert "PRIVATE KEY MATERIAL" not in result.output
        assert result.exit_code != 0
    finally:
        probe.unlink()
        if created:
            ssh_dir.rmdir()


async def test_daemonized_grandchild_dies_with_the_timeout(workspace: Path) -> None:
    marker = f"codeloop-daemon-{uuid.uuid4().hex}"
    env = SandboxedExecutionEnvironment(workspace, mode="workspace-write")
    await env.initialize()
    command = (
        f"(setsid bash -c 'exec -a {marker} sleep 300' > /dev/null 2>&1 &); "
        f"nohup bash -c 'exec -a {marker}-2 sleep 300' > /dev/null 2>&1 & "
        "echo started; sleep 60"
    )
    result = await env.exec_command(command, timeout_ms=1500)
    assert result.timed_out
    assert "started" in result.stdout
    for _ in range(50):
        if not _pids_with_marker(marker):
            break
        await asyncio.sleep(0.1)
    assert _pids_with_marker(marker) == []


async def test_daemon_outlives_an_unsandboxed_timeout_but_not_a_sandboxed_one(workspace: Path) -> None:
    """The reason the sandbox exists: without a PID namespace a setsid daemon that also
    empties its environment (so the runner's CODELOOP_PROCESS mark is gone) escapes."""
    marker = f"codeloop-escape-{uuid.uuid4().hex}"
    command = f"(setsid env -i /bin/bash -c 'exec -a {marker} sleep 300' > /dev/null 2>&1 &); sleep 60"
    full = SandboxedExecutionEnvironment(workspace, mode="off", network=True)
    await full.exec_command(command, timeout_ms=800)
    escaped = _pids_with_marker(marker)
    for pid in escaped:
        os.kill(pid, 9)
    assert escaped, "an unsandboxed setsid daemon is expected to survive the group kill"


async def test_network_off_refuses_a_loopback_server_on_the_host(workspace: Path, loopback_server: int) -> None:
    env = SandboxedExecutionEnvironment(workspace, mode="workspace-write", network=False)
    await env.initialize()
    result = await env.exec_command(_connect_cmd(loopback_server))
    assert result.exit_code != 0
    assert "pong" not in result.stdout


async def test_network_on_reaches_a_loopback_server_on_the_host(workspace: Path, loopback_server: int) -> None:
    env = SandboxedExecutionEnvironment(workspace, mode="workspace-write", network=True)
    await env.initialize()
    result = await env.exec_command(_connect_cmd(loopback_server))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "pong"


async def test_missing_bwrap_fails_loudly_and_never_runs_unsandboxed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    env = SandboxedExecutionEnvironment(workspace, mode="workspace-write")
    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap"):
        await env.initialize()
    with pytest.raises(SandboxUnavailableError):
        await env.exec_command("touch ran.txt")
    assert not (workspace / "ran.txt").exists()


async def test_unknown_mode_is_rejected(workspace: Path) -> None:
    with pytest.raises(ValueError, match="read-only, workspace-write, off"):
        SandboxedExecutionEnvironment(workspace, mode="yolo")  # type: ignore[arg-type]


async def test_commands_see_the_workspace_at_its_own_path(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    env = SandboxedExecutionEnvironment(workspace, mode="workspace-write")
    await env.initialize()
    result = await env.exec_command("pwd", working_dir="sub")
    assert result.stdout.strip() == str((workspace / "sub").resolve())
