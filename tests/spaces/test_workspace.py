"""Network policy is enforced by running commands without network (bubblewrap) when possible."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.policy import preset
from codeloop.spaces.workspace import open_environment


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on the host's loopback that accepts connections."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                conn.close()
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield int(srv.getsockname()[1])
    stop.set()
    t.join()
    srv.close()


CONNECT = ("python3 -c \"import socket,sys; s=socket.socket(); s.settimeout(2); "
           "s.connect(('127.0.0.1', {port})); print('connected')\"")


async def test_network_off_space_cannot_open_sockets(tmp_path: Path, listener: int) -> None:
    space = await open_environment(tmp_path / "ws", preset("standard"))
    try:
        if space.network_enforcement != "sandbox":
            pytest.skip("bubblewrap sandbox is not usable here; network-off is then enforced by policy only")
        result = await space.env.exec_command(CONNECT.format(port=listener))
        assert "connected" not in result.stdout and result.exit_code != 0
    finally:
        await space.env.cleanup()


async def test_network_on_space_reaches_the_listener(tmp_path: Path, listener: int) -> None:
    space = await open_environment(tmp_path / "ws", preset("permissive"))
    try:
        assert space.network_enforcement == "allowed"
        result = await space.env.exec_command(CONNECT.format(port=listener))
        assert result.stdout.strip() == "connected", result.stderr
    finally:
        await space.env.cleanup()


async def test_without_sandbox_enforcement_is_reported_as_policy_only(tmp_path: Path) -> None:
    space = await open_environment(tmp_path / "ws", preset("standard"), sandbox=False)
    try:
        assert space.network_enforcement == "policy-only"
    finally:
        await space.env.cleanup()


async def test_sandbox_that_cannot_run_falls_back_to_policy_only_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    fake = bindir / "bwrap"  # fails like bubblewrap in a container without user namespaces
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    space = await open_environment(tmp_path / "ws", preset("standard"))
    try:
        assert space.network_enforcement == "policy-only"
        assert "network-off is enforced by command policy only" in caplog.text
    finally:
        await space.env.cleanup()
