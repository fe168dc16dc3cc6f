"""SSHExecutionEnvironment against a real OpenSSH server on 127.0.0.1 (issue 4)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from codeloop.environments.base import GrepOptions
from codeloop.environments.errors import (
    FileNotFoundInWorkspaceError,
    InvalidPatternError,
    NotAFileError,
    PathOutsideWorkspaceError,
    WorkspaceError,
)
from codeloop.environments.ssh import SSHExecutionEnvironment

from .sshd import SshServer, find_sshd, start_sshd

if find_sshd() is None:  # pragma: no cover - depends on the host
    pytest.fail("sshd must be installed for these tests (run scripts/system-deps)")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def make_env(server: SshServer, root: Path, **kw: object) -> SSHExecutionEnvironment:
    return SSHExecutionEnvironment(
        server.host,
        str(root),
        port=server.port,
        username=server.user,
        client_keys=[str(server.user_key)],
        known_hosts=str(server.known_hosts),
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
async def env(sshd: SshServer, tmp_path: Path) -> AsyncIterator[SSHExecutionEnvironment]:
    environment = make_env(sshd, tmp_path / "remote-ws")
    await environment.initialize()
    yield environment
    await environment.cleanup()


async def test_files_round_trip_over_sftp(env: SSHExecutionEnvironment, tmp_path: Path) -> None:
    assert await env.write_file("src/app.py", "print('hi')\n") == len("print('hi')\n")
    assert (tmp_path / "remote-ws" / "src" / "app.py").read_text() == "print('hi')\n"
    assert await env.read_file("src/app.py") == "print('hi')\n"
    assert await env.file_exists("src/app.py")
    entries = await env.list_directory(".", depth=2)
    assert [(e.name, e.is_dir) for e in entries] == [("src", True), ("src/app.py", False)]
    await env.delete_file("src/app.py")
    assert not await env.file_exists("src/app.py")


async def test_commands_run_in_the_remote_working_directory(env: SSHExecutionEnvironment, tmp_path: Path) -> None:
    await env.write_file("sub/x.txt", "x")
    result = await env.exec_command("pwd; echo err >&2; exit 4", working_dir="sub")
    assert result.stdout.strip() == str((tmp_path / "remote-ws" / "sub").resolve())
    assert result.stderr == "err\n"
    assert result.exit_code == 4
    assert not result.timed_out


async def test_timeout_kills_the_remote_process_group(env: SSHExecutionEnvironment, tmp_path: Path) -> None:
    marker = tmp_path / f"alive-{uuid.uuid4().hex}"
    result = await env.exec_command(
        f"echo partial; (sleep 3; touch {marker}) & sleep 30", timeout_ms=1000
    )
    assert result.timed_out
    assert result.stdout == "partial\n"
    assert result.exit_code != 0
    # The backgrounded child was in the same group: it must never get to touch the marker.
    check = await env.exec_command(f"sleep 3; test -e {marker} && echo alive || echo gone")
    assert check.stdout.strip() == "gone"


async def test_output_is_capped_while_streaming(sshd: SshServer, tmp_path: Path) -> None:
    from codeloop.environments.base import ExecLimits

    environment = make_env(sshd, tmp_path / "capped", limits=ExecLimits(memory_cap_bytes=64 * 1024))
    await environment.initialize()
    try:
        result = await environment.exec_command("head -c 5000000 /dev/zero | tr '\\0' a")
    finally:
        await environment.cleanup()
    assert result.stdout_bytes == 5_000_000
    assert len(result.stdout) < 200_000
    assert "bytes omitted" in result.stdout
    assert result.full_output_path is not None
    assert Path(result.full_output_path).stat().st_size == 5_000_000
    Path(result.full_output_path).unlink()


async def test_local_secrets_do_not_reach_remote_commands(
    env: SSHExecutionEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODELOOP_TEST_API_KEY", "sk-local-secret")
    result = await env.exec_command("env", env_vars={"VISIBLE": "yes", "OTHER_TOKEN": "hidden"})
    assert "VISIBLE=yes" in result.stdout
    assert "sk-local-secret" not in result.stdout
    assert "OTHER_TOKEN" not in result.stdout


async def test_grep_and_glob_run_remotely(env: SSHExecutionEnvironment) -> None:
    await env.write_file("a.py", "def alpha():\n    return 1\n")
    await env.write_file("pkg/b.py", "ALPHA = 2\n")
    await env.write_file("notes.md", "alpha notes\n")
    found = await env.grep("alpha", ".", GrepOptions(case_insensitive=True, glob_filter="*.py"))
    assert found.splitlines() == ["a.py:1:def alpha():", "pkg/b.py:1:ALPHA = 2"]
    assert sorted(await env.glob("**/*.py")) == ["a.py", "pkg/b.py"]
    with pytest.raises(InvalidPatternError):
        await env.grep("(unclosed", ".")


async def test_paths_cannot_escape_the_remote_root(env: SSHExecutionEnvironment, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    await env.exec_command(f"ln -s {tmp_path} link")
    for bad in ("../outside.txt", str(outside), "link/outside.txt", "a\x00b"):
        with pytest.raises(PathOutsideWorkspaceError):
            await env.read_file(bad)
        with pytest.raises(PathOutsideWorkspaceError):
            await env.write_file(bad, "pwned")
    assert outside.read_text() == "secret"
    assert not await env.file_exists("../outside.txt")


async def test_clear_errors_for_missing_files_and_directories(env: SSHExecutionEnvironment) -> None:
    with pytest.raises(FileNotFoundInWorkspaceError):
        await env.read_file("missing.txt")
    await env.write_file("d/f.txt", "x")
    with pytest.raises(NotAFileError):
        await env.read_file("d")


async def test_unknown_host_key_is_refused(sshd: SshServer, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts_empty"
    empty.write_text("")
    environment = SSHExecutionEnvironment(
        sshd.host, str(tmp_path / "ws"), port=sshd.port, username=sshd.user,
        client_keys=[str(sshd.user_key)], known_hosts=str(empty),
    )
    with pytest.raises(WorkspaceError, match=r"known_hosts|Host key"):
        await environment.initialize()


def test_turning_off_host_key_checking_needs_explicit_consent() -> None:
    with pytest.raises(ValueError, match="insecure_no_host_check"):
        SSHExecutionEnvironment("127.0.0.1", "/tmp/x", known_hosts=None)


async def test_changing_calls_on_an_ssh_workspace_are_uncovered_and_a_rewind_refuses(
        sshd: SshServer, tmp_path: Path) -> None:
    """A session recorded on an SSH workspace: its files are on the remote host, so nothing
    snapshots them here; each changing call is marked uncovered and a rewind across it refuses,
    naming it, and changes nothing (docs/sessions.md)."""
    from codeloop.agent.config import SessionConfig
    from codeloop.agent.session import Session
    from codeloop.environments.logging_and_read_only import LoggingExecutionEnvironment
    from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response, tool_call_response
    from codeloop.llm.client import Client
    from codeloop.profiles import create_profile
    from codeloop.sessions import RewindRefusedError, record_session, rewind

    remote = tmp_path / "remote-ws"
    env = make_env(sshd, remote)
    await env.initialize()
    wrapped = LoggingExecutionEnvironment(env)  # a wrapper says the same
    assert env.files_elsewhere and wrapped.files_elsewhere
    adapter = ScriptedAdapter([
        tool_call_response(("write_file", {"file_path": "notes.txt", "content": "v1\n"})),
        text_response("Wrote notes.txt."),
    ])
    session = Session(create_profile("openai"), wrapped, SessionConfig(), Client({"scripted": adapter}))
    recording = record_session(session, str(remote))
    try:
        await session.submit("create notes.txt")
    finally:
        await session.close()
        recording.close()
    assert (remote / "notes.txt").read_text() == "v1\n"
    [mark] = recording.checkpoints.uncovered(0) + recording.checkpoints.uncovered(1)
    assert mark.tool == "write_file"
    assert recording.checkpoints.store is None
    with pytest.raises(RewindRefusedError, match=r"write_file.*which no checkpoint covers"):
        rewind(session.id, 0)
    assert (remote / "notes.txt").read_text() == "v1\n"
