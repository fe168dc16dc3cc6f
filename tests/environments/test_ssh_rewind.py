"""A session on an SSH workspace (a real OpenSSH server on 127.0.0.1) under ``record_session``:
its files are on the remote host, so nothing snapshots them here; each changing call is marked
uncovered and a rewind across it refuses, naming it, and changes nothing (docs/sessions.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.agent.config import SessionConfig
from codeloop.agent.session import Session
from codeloop.environments.logging_and_read_only import LoggingExecutionEnvironment
from codeloop.environments.ssh import SSHExecutionEnvironment
from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response, tool_call_response
from codeloop.llm.client import Client
from codeloop.profiles import create_profile
from codeloop.sessions import RewindRefusedError, record_session, rewind

from .sshd import SshServer, find_sshd, start_sshd

if find_sshd() is None:  # pragma: no cover - depends on the host
    pytest.fail("sshd must be installed for these tests (run scripts/system-deps)")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


async def test_changing_calls_on_an_ssh_workspace_are_uncovered_and_a_rewind_refuses(
        sshd: SshServer, tmp_path: Path) -> None:
    remote = tmp_path / "remote-ws"
    env = SSHExecutionEnvironment(sshd.host, str(remote), port=sshd.port, username=sshd.user,
                                  client_keys=[str(sshd.user_key)], known_hosts=str(sshd.known_hosts))
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
