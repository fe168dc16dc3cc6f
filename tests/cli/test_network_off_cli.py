"""``--network off`` holds with ``--sandbox off`` too, or the command refuses (issue 18):
the real ``codeloop run`` / ``codeloop tool`` with the real bubblewrap, a command that
GETs a real HTTP server on the host's loopback, and a scripted model on another loopback
server (the model's own calls are made by codeloop, outside the sandbox, and still work)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer, HitServer, text_reply, tool_reply
from test_run_cli import CODELOOP, isolated_env, run
from test_run_sessions_cli import fake_bwrap_path, tool_end

from codeloop.environments.sandbox import probe_bwrap

if probe_bwrap() is not None:  # pragma: no cover - depends on the host
    pytest.fail(f"bubblewrap must work for these tests: {probe_bwrap()} (run scripts/system-deps)")


@pytest.fixture
def target() -> Iterator[HitServer]:
    with HitServer() as s:
        yield s


def run_fetch(server: ChatServer, target: HitServer, workspace: Path, network: str) -> dict[str, object]:
    server.replies.extend([tool_reply("shell", {"command": target.fetch_command()}), text_reply("fetched")])
    done = run(["fetch the probe", "--json", "--base-url", server.base_url, "--profile", "anthropic",
                "--approval", "never-ask", "--sandbox", "off", "--network", network], workspace)
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 2  # the model was reached twice: codeloop's own calls have the network
    return tool_end(done.stdout)


def test_run_sandbox_off_network_off_reaches_no_loopback_server(server, target, workspace) -> None:
    end = run_fetch(server, target, workspace, "off")
    assert "pong" not in str(end["output"])
    assert target.hits == []


def test_run_sandbox_off_network_on_reaches_the_loopback_server(server, target, workspace) -> None:
    end = run_fetch(server, target, workspace, "on")
    assert "pong" in str(end["output"])
    assert target.hits == ["/probe"]


def test_run_network_off_without_bubblewrap_refuses_before_the_model(server, tmp_path, workspace) -> None:
    env = isolated_env(workspace, PATH=fake_bwrap_path(tmp_path))
    for sandbox in (["--sandbox", "off"], []):  # chosen off, and the default sandbox that would fall back
        done = run(["go", "--base-url", server.base_url, *sandbox, "--network", "off"], workspace, env=env)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert "--network off needs bubblewrap" in done.stderr and "--network on" in done.stderr
        assert "NO SANDBOX" not in done.stderr
    assert server.requests == []


def tool(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CODELOOP, "tool", *args], capture_output=True,
                          text=True, timeout=60, env=env, check=False)


@pytest.mark.parametrize("network", ["off", "on"])
def test_tool_shell_sandbox_off_network_flag_holds(target, tmp_path, network) -> None:
    done = tool("shell", "--args", json.dumps({"command": target.fetch_command()}), "--cwd", str(tmp_path),
                "--sandbox", "off", "--network", network, "--approval", "never-ask", "--json")
    output = json.loads(done.stdout)["output"]
    assert "denied" not in output  # the call ran: what is tested is the network, not the approval
    assert ("pong" in output) is (network == "on")
    assert target.hits == ([] if network == "off" else ["/probe"])


def test_tool_network_off_without_bubblewrap_refuses_and_runs_nothing(tmp_path) -> None:
    (tmp_path / "ws").mkdir()
    done = tool("shell", "--args", json.dumps({"command": "touch ran.txt"}), "--cwd", str(tmp_path / "ws"),
                "--sandbox", "off", "--network", "off", env=isolated_env(tmp_path / "ws",
                                                                           PATH=fake_bwrap_path(tmp_path)))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "--network off needs bubblewrap" in done.stderr and "apt-get install bubblewrap" in done.stderr
    assert not (tmp_path / "ws" / "ran.txt").exists()
