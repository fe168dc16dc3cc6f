"""The embedded model's server dies mid-session (issue 23): ``codeloop run`` on the local
model starts it again on the next model call, once, says so, and the task finishes. The
server is tests/cli/fake_llama_server.py, installed as ``llama-server`` in a private models
directory (sparse weights of the right size with their checksum marker)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from chat_server import text_reply, tool_reply
from test_run_cli import CODELOOP, isolated_env

from codeloop.llm import llama_server
from codeloop.llm.llama_install import spec_for

pytestmark = pytest.mark.slow


def fake_install(models: Path, model: str) -> None:
    binary = models / "llama-server"
    binary.write_text(f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = {str(Path(__file__).parent / 'fake_llama_server.py')!r}\n"
                      f"runpy.run_path(sys.argv[0], run_name='__main__')\n")
    binary.chmod(0o755)
    (models / "llama-server.path").write_text(str(binary))
    spec = spec_for(model)
    weights = models / spec.file_name
    with open(weights, "wb") as f:
        f.truncate(spec.size)  # sparse: the fake server never reads it
    weights.with_suffix(".sha256").write_text(spec.sha256)


def test_a_dead_local_server_is_restarted_once_and_the_task_finishes(tmp_path: Path) -> None:
    models, work = tmp_path / "models", tmp_path / "work"
    models.mkdir()
    work.mkdir()
    fake_install(models, "0.5b")
    script = models / "script.json"
    script.write_text(json.dumps([tool_reply("shell", {"command": "echo ran >> log.txt"}) | {"crash": True},
                                  text_reply("Appended.")]))
    env = isolated_env(work, CODELOOP_MODELS_DIR=str(models), FAKE_LLAMA_SCRIPT=str(script))
    env.pop("OPENAI_API_KEY", None)
    try:
        done = subprocess.run([CODELOOP, "run", "append", "--cwd", str(work), "--model", "0.5b", "--profile",
                               "anthropic", "--approval", "never-ask", "--sandbox", "off"],
                              capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    finally:
        state = llama_server.read_state("0.5b", models)
        if state is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(state.pid, signal.SIGKILL)
    assert done.returncode == 0, done.stderr
    assert "stopped; restarting it" in done.stderr and "Appended." in done.stdout
    assert (work / "log.txt").read_text() == "ran\n"
