"""``open_environment`` / ``settle_sandbox``: one place decides the environment, and
"network off" holds in every mode (issue 18) — with the real bubblewrap and a real
server on the host's loopback that answers ``pong`` to every connection."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codeloop.environments.errors import SandboxUnavailableError
from codeloop.environments.factory import (
    SandboxOptionError,
    check_sandbox_options,
    open_environment,
    settle_sandbox,
)
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.environments.sandbox import SandboxedExecutionEnvironment

from .test_sandbox import _connect_cmd  # its import fails the run when bubblewrap cannot work


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH whose bwrap fails like bubblewrap in a container without user namespaces."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    exe = bindir / "bwrap"
    exe.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")


async def test_full_with_network_off_reaches_no_server_but_writes_anywhere(
    tmp_path: Path, loopback_server: int
) -> None:
    outside = tmp_path / "outside.txt"
    (tmp_path / "ws").mkdir()
    env = open_environment(tmp_path / "ws", sandbox="off", network=False)
    await env.initialize()
    result = await env.exec_command(f"{_connect_cmd(loopback_server)}; echo written > {outside}")
    assert "pong" not in result.stdout and "refused" in result.stderr
    assert outside.read_text() == "written\n"  # full: the whole file system stays writable


async def test_full_with_network_on_is_a_plain_local_environment_that_reaches_the_server(
    tmp_path: Path, loopback_server: int
) -> None:
    env = open_environment(tmp_path, sandbox="off", network=True)
    assert type(env) is LocalExecutionEnvironment
    await env.initialize()
    result = await env.exec_command(_connect_cmd(loopback_server))
    assert result.stdout.strip() == "pong", result.output


@pytest.mark.parametrize("mode", ["read-only", "workspace-write", "off"])
async def test_network_left_out_follows_the_sandbox(tmp_path: Path, loopback_server: int, mode: str) -> None:
    env = open_environment(tmp_path, sandbox=mode)  # type: ignore[arg-type]
    await env.initialize()
    result = await env.exec_command(_connect_cmd(loopback_server))
    assert ("pong" in result.stdout) is (mode == "off"), result.output


async def test_full_with_network_off_without_bubblewrap_refuses_and_runs_nothing(
    tmp_path: Path, no_bwrap: None
) -> None:
    env = open_environment(tmp_path, sandbox="off", network=False)
    assert isinstance(env, SandboxedExecutionEnvironment)
    with pytest.raises(SandboxUnavailableError, match="--network off needs bubblewrap") as caught:
        await env.initialize()
    assert "apt-get install bubblewrap" in str(caught.value) and "--network on" in str(caught.value)
    with pytest.raises(SandboxUnavailableError):
        await env.exec_command("touch ran.txt")
    assert not (tmp_path / "ran.txt").exists()


def test_settle_sandbox_defaults_and_choices() -> None:
    default = settle_sandbox(None, None, default="workspace-write")
    assert (default.mode, default.network, default.warning) == ("workspace-write", False, None)
    assert settle_sandbox(None, None, default="off").network is True
    assert settle_sandbox("off", "off", default="workspace-write").network is False
    assert settle_sandbox("read-only", "on", default="off").network is True


def test_full_is_the_deprecated_name_of_off_and_says_so() -> None:
    """Issue 32: "full" read as "fully sandboxed" but meant no sandbox."""
    old = settle_sandbox("full", None, default="workspace-write")
    assert (old.mode, old.network) == ("off", True)
    assert old.warning is not None and "deprecated" in old.warning and "--sandbox off" in old.warning
    assert settle_sandbox("off", None, default="workspace-write").warning is None
    assert check_sandbox_options("full", "off") == ("off", False)


def test_unknown_values_are_named_with_the_choices() -> None:
    with pytest.raises(SandboxOptionError, match=r"--sandbox nope: unknown mode. Use one of: read-only, "):
        check_sandbox_options("nope", None)
    with pytest.raises(SandboxOptionError, match=r"--network maybe: unknown value. Use on or off."):
        settle_sandbox(None, "maybe", default="off")


def test_without_bubblewrap_only_the_default_sandbox_falls_back_and_network_off_never_does(no_bwrap: None) -> None:
    fallback = settle_sandbox(None, None, default="workspace-write")
    assert (fallback.mode, fallback.network) == ("off", True)
    assert "--sandbox off to silence" in fallback.warning and "--sandbox full" not in fallback.warning
    assert fallback.warning is not None and "NO SANDBOX" in fallback.warning
    assert "install bubblewrap" in fallback.warning
    with pytest.raises(SandboxUnavailableError, match=r"--network off needs bubblewrap.*--network on"):
        settle_sandbox(None, "off", default="workspace-write")
    with pytest.raises(SandboxUnavailableError, match="--network off needs bubblewrap"):
        settle_sandbox("off", "off", default="workspace-write")
    with pytest.raises(SandboxUnavailableError, match=r"--sandbox read-only needs bubblewrap.*--sandbox off"):
        settle_sandbox("read-only", "on", default="workspace-write")
    assert settle_sandbox("off", None, default="workspace-write").warning is None  # nothing to enforce
