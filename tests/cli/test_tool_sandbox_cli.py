"""`codeloop tool --sandbox/--network` runs any tool inside bubblewrap (issue 4 "CLI")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

CODELOOP = [str(Path(sys.executable).with_name("codeloop"))]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CODELOOP, *args], capture_output=True, text=True, timeout=60, env=env, check=False)


def test_shell_in_workspace_write_sandbox_cannot_write_outside(tmp_path: Path) -> None:
    outside = Path.home() / f"codeloop-cli-{uuid.uuid4().hex}"
    command = f"echo inside > a.txt; echo outside > {outside}; cat a.txt"
    done = run("tool", "shell", "--args", json.dumps({"command": command}), "--cwd", str(tmp_path),
               "--sandbox", "workspace-write", "--json", "--approval", "never-ask")
    result = json.loads(done.stdout)
    assert "inside" in result["output"] and "Read-only file system" in result["output"]
    assert (tmp_path / "a.txt").read_text() == "inside\n"
    assert not outside.exists()


def test_write_file_in_read_only_sandbox_is_refused_with_exit_1(tmp_path: Path) -> None:
    done = run("tool", "write_file", "--args", json.dumps({"file_path": "x.txt", "content": "x"}),
               "--cwd", str(tmp_path), "--sandbox", "read-only")
    assert done.returncode == 1
    assert "read-only" in done.stdout + done.stderr
    assert not (tmp_path / "x.txt").exists()


def test_network_off_in_the_sandbox(tmp_path: Path) -> None:
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('reached')\""
    try:
        off = run("tool", "shell", "--args", json.dumps({"command": probe}), "--cwd", str(tmp_path),
                  "--sandbox", "workspace-write", "--network", "off", "--json", "--approval", "never-ask")
        on = run("tool", "shell", "--args", json.dumps({"command": probe}), "--cwd", str(tmp_path),
                 "--sandbox", "workspace-write", "--network", "on", "--json", "--approval", "never-ask")
    finally:
        server.close()
    assert "reached" not in json.loads(off.stdout)["output"]
    assert "reached" in json.loads(on.stdout)["output"]


def test_missing_bwrap_is_a_clear_error_not_an_unsandboxed_run(tmp_path: Path) -> None:
    env = dict(os.environ)
    python_dir = str(Path(sys.executable).parent)
    env["PATH"] = python_dir  # no bwrap on this PATH
    assert shutil.which("bwrap", path=python_dir) is None
    done = run("tool", "shell", "--args", json.dumps({"command": "touch ran.txt"}), "--cwd", str(tmp_path),
               "--sandbox", "workspace-write", "--approval", "never-ask", env=env)
    assert done.returncode != 0
    assert "apt-get install bubblewrap" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "ran.txt").exists()
