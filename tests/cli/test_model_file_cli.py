"""``codeloop run --model-file PATH.gguf`` and ``--gpu-layers N`` (issue 33): any local GGUF is
served through the same local-server machinery as the embedded model, and the offload count
reaches llama-server's ``--n-gpu-layers``. The server is tests/cli/fake_llama_server.py
installed as ``llama-server`` in a private models directory; it records its command line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import text_reply
from test_local_restart_cli import fake_install
from test_run_cli import CODELOOP, isolated_env

from codeloop.llm import llama_server

pytestmark = pytest.mark.slow


@pytest.fixture
def models(tmp_path: Path) -> Iterator[Path]:
    """A private models directory with the fake llama-server (and 0.5B's sparse weights);
    every server recorded there is killed afterwards."""
    base = tmp_path / "models"
    base.mkdir()
    fake_install(base, "0.5b")
    (base / "script.json").write_text(json.dumps([text_reply("All done.")]))
    yield base
    for record in base.glob("server-*.json"):
        state = llama_server.read_state(record.stem.removeprefix("server-"), base)
        if state is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(state.pid, signal.SIGKILL)


def gguf(path: Path) -> Path:
    path.write_bytes(b"GGUF" + b"\0" * 60)
    return path


def codeloop_run(models: Path, work: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    work.mkdir(exist_ok=True)
    env = isolated_env(work, CODELOOP_MODELS_DIR=str(models), FAKE_LLAMA_SCRIPT=str(models / "script.json"))
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([CODELOOP, "run", "say hi", "--cwd", str(work), "--profile", "anthropic",
                           "--approval", "never-ask", "--sandbox", "full", *args],
                          capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
                          cwd=cwd)


def started(models: Path) -> list[list[str]]:
    """The command line of each llama-server started, in order."""
    argv = models / "script.argv"
    return [json.loads(line) for line in argv.read_text().splitlines()] if argv.exists() else []


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_model_file_is_served_by_the_local_server_with_the_gpu_layers_asked(models: Path, tmp_path: Path) -> None:
    weights = gguf(tmp_path / "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf")
    # A relative path is taken from the current directory, as any file argument.
    done = codeloop_run(models, tmp_path / "work", "--model-file", weights.name, "--gpu-layers", "7",
                        cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "All done." in done.stdout
    [argv] = started(models)
    assert flag(argv, "-m") == str(weights) and flag(argv, "--n-gpu-layers") == "7"
    assert flag(argv, "--alias") == "Qwen2.5-Coder-7B-Instruct-Q4_K_M"
    assert flag(argv, "--host") == "127.0.0.1"
    # Issue 33: the prompt cache on and no fixed seed, so per-request seeds give distinct samples.
    assert "--no-cache-prompt" not in argv and "--seed" not in argv
    state = llama_server.read_state(llama_server.model_file(weights).key, models)
    assert state is not None and state.weights == str(weights) and state.gpu_layers == 7
    assert llama_server.read_state("0.5b", models) is None  # the embedded model was not started


def test_a_second_run_reuses_the_server_and_other_gpu_layers_restart_it(models: Path, tmp_path: Path) -> None:
    weights = gguf(tmp_path / "coder.gguf")
    for layers in ("5", "5", "9"):
        done = codeloop_run(models, tmp_path / "work", "--model-file", str(weights), "--gpu-layers", layers)
        assert done.returncode == 0, done.stderr
    assert [flag(argv, "--n-gpu-layers") for argv in started(models)] == ["5", "9"]
    assert "restarting llama-server for coder" in done.stderr


def test_gpu_layers_reach_the_embedded_model_too_and_are_left_out_when_not_given(models: Path, tmp_path: Path) -> None:
    done = codeloop_run(models, tmp_path / "work", "--model", "0.5b", "--gpu-layers", "0")
    assert done.returncode == 0, done.stderr
    [argv] = started(models)
    assert flag(argv, "-m") == str(models / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    assert flag(argv, "--n-gpu-layers") == "0"
    llama_server.stop("0.5b", models)
    done = codeloop_run(models, tmp_path / "work", "--model", "0.5b")
    assert done.returncode == 0, done.stderr
    assert "--n-gpu-layers" not in started(models)[1]


def test_model_file_from_the_user_config(models: Path, tmp_path: Path) -> None:
    weights = gguf(tmp_path / "from-config.gguf")
    work = tmp_path / "work"
    (tmp_path / "userconf").mkdir()
    (tmp_path / "userconf" / "config.toml").write_text(f'model_file = "{weights}"\ngpu_layers = 2\n')
    done = codeloop_run(models, work)
    assert done.returncode == 0, done.stderr
    [argv] = started(models)
    assert flag(argv, "-m") == str(weights) and flag(argv, "--n-gpu-layers") == "2"
    # A server named on the command line wins over the config file's model file.
    done = codeloop_run(models, work, "--base-url", "http://127.0.0.1:9/v1", "--max-retries", "0")
    assert "--model-file" not in done.stderr and len(started(models)) == 1


@pytest.mark.parametrize(("make", "args", "message"), [
    (lambda d: d / "missing.gguf", [], "missing.gguf' does not exist: pass the path of a .gguf file"),
    (lambda d: d, [], "is a directory: pass the path of a .gguf file"),
    (lambda d: (d / "x.gguf").write_text("not a model") and d / "x.gguf", [],
     "is not a GGUF file (it does not start with 'GGUF')"),
    (lambda d: gguf(d / "m.gguf"), ["--base-url", "http://127.0.0.1:9/v1"],
     "--model-file serves a local GGUF with llama-server: leave out --provider and --base-url"),
    (lambda d: gguf(d / "m.gguf"), ["--model", "0.5b"], "--model and --model-file exclude each other"),
    (lambda d: gguf(d / "m.gguf"), ["--gpu-layers", "-1"], "--gpu-layers must be 0 or more, not -1"),
])
def test_a_bad_model_file_is_one_line_and_starts_nothing(models: Path, tmp_path: Path, make, args, message) -> None:
    target = make(tmp_path)
    done = codeloop_run(models, tmp_path / "work", "--model-file", str(target), *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert started(models) == []


def test_gpu_layers_for_a_remote_server_is_a_usage_error(models: Path, tmp_path: Path) -> None:
    done = codeloop_run(models, tmp_path / "work", "--base-url", "http://127.0.0.1:9/v1", "--gpu-layers", "3")
    assert done.returncode == 2
    assert "--gpu-layers applies to the local llama-server only" in done.stderr
    assert started(models) == []
