"""Cold start of the ``codeloop`` command (issue 9 benchmark).

Measures, as wall time of real subprocesses (median and fastest of N runs; the machine is
shared, so the fastest is the least disturbed):

- ``codeloop --help``;
- ``codeloop run "TASK" --json`` from process start until its first model request reaches a
  loopback chat-completions server (tests/cli/chat_server.py), with the default sandbox
  setting (the bubblewrap probe included);
- side by side, ``aider --help`` and ``mini --help`` (mini-swe-agent), each installed in its
  own venv under ``.bench/`` (created with pip when missing; a peer whose install fails is
  skipped with a note).

Prints each time and its ratio to the fastest peer's ``--help`` (goal, issue 9: codeloop under
150 ms and under a fifth of the fastest peer).

Usage: .venv/bin/python benchmarks/cold_start.py [--runs 9] [--no-install]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "cli"))
from chat_server import ChatServer, text_reply  # noqa: E402

CODELOOP = str(Path(sys.executable).parent / "codeloop")
PEERS = {"aider": ("aider-chat", "aider"), "mini": ("mini-swe-agent", "mini")}
"""Peer name: (pip package, command) installed in ``.bench/<name>``."""


def peer_command(name: str, install: bool) -> str | None:
    """The peer's executable, installing its venv when missing; None (with a note) on failure."""
    package, command = PEERS[name]
    venv = ROOT / ".bench" / name
    exe = venv / "bin" / command
    if exe.exists():
        return str(exe)
    if not install:
        print(f"note: {name} skipped: {exe} missing (run without --no-install to create it)")
        return None
    print(f"installing {package} into {venv} ...", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", package], check=True, capture_output=True,
                       timeout=900)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        print(f"note: {name} skipped: installing {package} failed ({exc})")
        return None
    return str(exe) if exe.exists() else None


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    state = tempfile.mkdtemp(prefix="codeloop-bench-")
    clean.update(CODELOOP_STATE_DIR=state, CODELOOP_CONFIG_DIR=state)
    return clean


def time_help(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True, timeout=120, env=env())
        times.append(time.perf_counter() - start)
    return times


def time_first_request(runs: int) -> list[float]:
    """Seconds from spawning ``codeloop run --json`` to its first request at the server."""
    times = []
    with ChatServer() as server, tempfile.TemporaryDirectory() as workspace:
        for _ in range(runs):
            server.replies.append(text_reply("ok"))
            seen = len(server.requests)
            start = time.perf_counter()
            proc = subprocess.Popen([CODELOOP, "run", "say ok", "--json", "--base-url", server.base_url,
                                     "--cwd", workspace], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    stdin=subprocess.DEVNULL, env=env())
            while len(server.requests) == seen:
                if proc.poll() is not None:
                    raise SystemExit(f"codeloop run exited ({proc.returncode}) before any model request")
                time.sleep(0.0005)
            times.append(time.perf_counter() - start)
            proc.wait(timeout=60)
    return times


def compile_sources() -> None:
    """Byte-compile codeloop's sources, as installing a wheel does for the peers.

    An editable install compiles modules on first import and caches them, unless
    ``PYTHONDONTWRITEBYTECODE`` is set (as on some CI machines): then every start would
    compile ~80 modules (~170 ms) that a pip-installed peer never compiles."""
    import compileall

    package = ROOT / "src" / "codeloop"
    if not compileall.compile_dir(str(package), quiet=1, workers=0):
        raise SystemExit(f"byte-compiling {package} failed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--no-install", action="store_true", help="skip peers whose venv is missing")
    args = parser.parse_args()
    compile_sources()
    rows: list[tuple[str, list[float]]] = [
        ("codeloop --help", time_help([CODELOOP, "--help"], args.runs)),
        ("codeloop run --json, to 1st request", time_first_request(args.runs)),
    ]
    peers = []
    for name in PEERS:
        exe = peer_command(name, not args.no_install)
        if exe is not None:
            peers.append((f"{name} --help", time_help([exe, "--help"], args.runs)))
    rows += peers
    fastest_peer = min((min(t) for _, t in peers), default=None)
    print(f"\n{'command':40} {'median ms':>10} {'fastest ms':>11} {'vs fastest peer':>16}")
    for label, times in rows:
        ratio = f"{min(times) / fastest_peer:.2f}x" if fastest_peer else "n/a"
        print(f"{label:40} {statistics.median(times) * 1000:10.1f} {min(times) * 1000:11.1f} {ratio:>16}")
    print(f"\n{args.runs} runs each; ratio = fastest codeloop time / fastest peer --help time "
          "(goal: < 0.2 and < 150 ms).")


if __name__ == "__main__":
    main()
