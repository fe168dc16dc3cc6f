"""Nothing codeloop starts outlives it (issue 23): ``codeloop tool shell`` and ``codeloop run``
killed mid-command by SIGTERM, SIGINT or SIGKILL leave no process behind: not the command,
not its background child, not the group guard (environments/runner.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from chat_server import ChatServer, tool_reply
from test_run_cli import CODELOOP, isolated_env

from process_tree import alive, descendants

pytestmark = pytest.mark.slow

COMMAND = "sleep 300 & echo $! > started; sleep 300"


def kill_mid_command(argv: list[str], cwd: Path, sig: signal.Signals, env: dict[str, str] | None = None) -> None:
    # A shell's background job (CI under `nohup ... &`) starts with SIGINT ignored, and codeloop
    # rightly keeps what it inherited: give it the default a terminal user's codeloop has.
    codeloop = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, env=env,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    below: set[int] = set()
    try:
        started = cwd / "started"
        while not (started.exists() and started.read_text().strip()):
            assert codeloop.poll() is None, "codeloop ended before its command started"
            time.sleep(0.02)
        below = descendants(codeloop.pid)
        # the guard, the shell (which execs the last sleep) and its background sleep
        assert int(started.read_text()) in below and len(below) >= 3
        codeloop.send_signal(sig)
        codeloop.wait(timeout=30)
        for _ in range(500):  # a SIGKILL is delivered asynchronously
            if not {pid for pid in below if alive(pid)}:
                break
            time.sleep(0.02)
        assert {pid for pid in below if alive(pid)} == set()
    finally:
        if codeloop.poll() is None:
            codeloop.kill()
            codeloop.wait()
        for pid in below:  # never leave a test's own processes behind, even when it fails
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


SIGNALS = pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)


@SIGNALS
def test_codeloop_tool_shell_killed_mid_command_leaves_nothing(sig: signal.Signals, tmp_path: Path) -> None:
    kill_mid_command([CODELOOP, "tool", "shell", "--cwd", str(tmp_path), "--approval", "never-ask",
                      "--args", json.dumps({"command": COMMAND, "timeout_ms": 600_000})], tmp_path, sig)


@SIGNALS
def test_codeloop_run_killed_mid_command_leaves_nothing(sig: signal.Signals, tmp_path: Path) -> None:
    with ChatServer() as server:
        server.replies.append(tool_reply("shell", {"command": COMMAND, "timeout_ms": 600_000}))
        kill_mid_command([CODELOOP, "run", "wait", "--cwd", str(tmp_path), "--base-url", server.base_url,
                          "--profile", "anthropic", "--approval", "never-ask", "--sandbox", "off"],
                         tmp_path, sig, isolated_env(tmp_path))
