"""``codeloop run`` with the local model runs the small-model strategy (issue 33): the terminal
says in plain words what is drafted and checked, the file is written through the pipeline, the
answer is codeloop's report, and each request carries the reply grammar. The server is
tests/cli/fake_llama_server.py installed as ``llama-server`` (it records request bodies)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from chat_server import text_reply
from test_local_restart_cli import fake_install
from test_run_cli import CODELOOP, isolated_env

from codeloop.llm import llama_server

pytestmark = pytest.mark.slow


def run_local(tmp_path: Path, replies: list[str], *args: str) -> tuple[subprocess.CompletedProcess[str], Path, list[dict]]:
    models, work = tmp_path / "models", tmp_path / "work"
    models.mkdir()
    work.mkdir()
    fake_install(models, "0.5b")
    script = models / "script.json"
    script.write_text(json.dumps([text_reply(r) for r in replies]))
    env = isolated_env(work, CODELOOP_MODELS_DIR=str(models), FAKE_LLAMA_SCRIPT=str(script))
    env.pop("OPENAI_API_KEY", None)
    try:
        done = subprocess.run([CODELOOP, "run", "Create hello.py that prints Hello", "--cwd", str(work),
                               "--model", "0.5b", "--approval", "never-ask", *args],
                              capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    finally:
        state = llama_server.read_state("0.5b", models)
        if state is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(state.pid, signal.SIGKILL)
    log = script.with_suffix(".requests")
    requests = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, work, requests


def test_the_local_model_drafts_under_the_grammar_and_the_terminal_says_what_happened(tmp_path: Path) -> None:
    done, work, requests = run_local(tmp_path, ['FILE hello.py\n```python\nprint("Hello")\n```\n', "DONE"])
    assert done.returncode == 0, done.stderr
    assert (work / "hello.py").read_text() == 'print("Hello")\n'
    chats = [r for r in requests if "messages" in r and r.get("max_tokens") != 1]
    assert len(chats) == 2 and all("root ::= files | run | done" in r["grammar"] for r in chats)
    assert "draft 1: 1 check passed (parse hello.py)" in done.stderr
    assert "warning" not in done.stderr.lower()
    assert "Changed hello.py." in done.stdout and "Checks passed: parse hello.py." in done.stdout


def test_no_strategy_keeps_the_tool_loop(tmp_path: Path) -> None:
    done, _work, requests = run_local(tmp_path, ["All done."], "--no-strategy")
    assert done.returncode == 0, done.stderr
    assert "All done." in done.stdout
    assert not any("grammar" in r for r in requests)


def test_candidates_sets_how_many_drafts_a_failing_step_gets(tmp_path: Path) -> None:
    # Every draft is outside the format (it cannot be applied), so a step drafts all its candidates.
    bad = "Sure, here it is."
    done, _work, requests = run_local(tmp_path, [bad] * 12, "--candidates", "1")
    chats = [r for r in requests if "messages" in r and r.get("max_tokens") != 1]
    assert done.returncode == 3, done.stderr  # no draft could be used: the step limit ends the input
    assert "drafting candidate" not in done.stderr  # the greedy draft only (then the repair round)
    first_step = len(chats)
    (tmp_path / "more").mkdir()
    done, _work, requests = run_local(tmp_path / "more", [bad] * 20, "--candidates", "4")
    chats = [r for r in requests if "messages" in r and r.get("max_tokens") != 1]
    assert "drafting candidate 4 of 4" in done.stderr and "drafting candidate 5" not in done.stderr
    assert [r.get("seed") for r in chats[1:4]] == [1, 2, 3] and len(chats) > first_step


def test_candidates_out_of_range_is_refused_with_the_range(tmp_path: Path) -> None:
    done = subprocess.run([CODELOOP, "run", "x", "--cwd", str(tmp_path), "--candidates", "0"],
                          capture_output=True, text=True, env=isolated_env(tmp_path), timeout=60)
    assert done.returncode == 2 and "--candidates" in done.stderr and "1<=x<=16" in done.stderr.replace(" ", "")
