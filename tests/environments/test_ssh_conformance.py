"""SSHExecutionEnvironment passes the shared conformance suite against a real sshd (issue 4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.environments import ExecLimits, ExecutionEnvironment
from codeloop.environments.ssh import SSHExecutionEnvironment

from .sshd import SshServer, start_sshd

pytest.register_assert_rewrite(f"{__package__}.conformance")
from .conformance import *  # noqa: E402, F403  (the shared suite)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    server = start_sshd(tmp_path_factory.mktemp("sshd-conformance"))
    yield server
    server.stop()


@pytest.fixture
def env_factory(sshd: SshServer):  # type: ignore[no-untyped-def]
    def make(root: Path, limits: ExecLimits) -> ExecutionEnvironment:
        return SSHExecutionEnvironment(
            sshd.host,
            str(root),
            port=sshd.port,
            username=sshd.user,
            client_keys=[str(sshd.user_key)],
            known_hosts=str(sshd.known_hosts),
            limits=limits,
        )

    return make
