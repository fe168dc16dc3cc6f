"""The README's main job with the real local model and the small-model strategy (issue 33):
``codeloop run "Create hello.py that prints hello, then run it"``, exactly as the README gives it
(no ``--model``: the embedded default, the 1.5B model), in at most 3 model calls, hello.py written
and printing hello. Its time with a warm server is measured beside the bare model by
``benchmarks/readme_job.py`` (no wall-clock threshold here). Marked ``e2e_slow``: the outcome
depends on the model's choices; run with ``pytest -m e2e_slow tests/cli/test_strategy_local_llm.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_run_cli import CODELOOP, isolated_env

pytestmark = [pytest.mark.e2e_slow, pytest.mark.timeout(900)]

TASK = "Create hello.py that prints hello, then run it"


def test_the_readme_job_with_the_embedded_model_takes_at_most_three_calls(request: pytest.FixtureRequest,
                                                                          tmp_path: Path) -> None:
    if "e2e_slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("model-dependent test: run with -m e2e_slow")
    from codeloop.cli.model_choice import LOCAL_MODEL
    from codeloop.llm.llama_install import models_dir, server_binary, weights_path

    if server_binary(models_dir()) is None or weights_path(LOCAL_MODEL, models_dir()) is None:
        pytest.skip(f"the {LOCAL_MODEL} model is not installed: scripts/local-llm install --model {LOCAL_MODEL}")
    work = tmp_path / "ws"
    work.mkdir()
    env = isolated_env(work)
    env.pop("OPENAI_API_KEY", None)
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("GEMINI_API_KEY", None)
    # The README's command, with --cwd for the test's directory and --json to count the calls.
    done = subprocess.run([CODELOOP, "run", TASK, "--cwd", str(work), "--approval", "never-ask", "--json"], capture_output=True, text=True, env=env, timeout=850, stdin=subprocess.DEVNULL)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    calls = [e for e in events if e["kind"] == "assistant_text_end"]
    said = [e["data"]["message"] for e in events if e["kind"] == "warning"]
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(calls) <= 3, [c["data"]["text"] for c in calls]
    script = work / "hello.py"
    assert script.exists(), ([c["data"]["text"] for c in calls], said)
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    assert "hello" in ran.stdout.lower(), (ran.stdout, ran.stderr)
