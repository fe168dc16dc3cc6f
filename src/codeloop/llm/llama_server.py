"""Run a real model on 127.0.0.1 with llama.cpp's ``llama-server`` (docs/local-models.md).

:func:`ensure_local_server` is what ``codeloop run`` calls when no API key is set: it
returns the base URL (``http://127.0.0.1:PORT/v1``) of a healthy server for the model,
installing and starting one when needed (progress on stderr). ``scripts/local-llm`` is the
command-line face (``python -m codeloop.llm.llama_server install|serve|stop|status``).

It serves one of the installed Qwen2.5-Coder models (``0.5b``, ``1.5b``) or any GGUF file the
user names (:func:`model_file`, ``codeloop run --model-file``), through the same start, record,
health check and stop. ``gpu_layers`` becomes llama-server's ``--n-gpu-layers``.

The server runs with ``--jinja -t 2 -c 8192 -np 1`` on a free loopback port, with the prompt
cache on and no fixed seed: a request's own ``seed`` (and temperature) decide its sample, so
several candidates of one prompt differ and none rereads the prompt (issue 33). Temperature 0
stays greedy; a caller that needs run-to-run identical outputs sends ``"cache_prompt": false``.
It is started in its own session (process group) so ``stop`` ends it and its children;
its pid, port and model sit in ``server-<key>.json`` under the models directory, and the
pid is only signalled while ``/proc/<pid>/cmdline`` still names llama-server.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from codeloop.llm.llama_install import (
    MODELS,
    LocalModelError,
    Progress,
    install,
    install_server,
    models_dir,
    server_binary,
    spec_for,
    weights_path,
)

# One slot (-np 1): every request gets the whole 8k context. With llama.cpp's default of
# four slots sharing one KV cache, concurrent requests (an agent and its subagents, a test
# run beside a benchmark) can together fill it and fail with "Context size has been exceeded".
# No --seed and no --no-cache-prompt (issue 33): with a fixed server seed and the cache off,
# "samples" of one prompt would all be the same text and each would reread the whole prompt.
SERVER_FLAGS = ("--jinja", "-t", "2")
CONTEXT_PER_SLOT = 8192
"""Each slot's context: ``-c`` is slots x this, since llama.cpp splits ``-c`` among ``-np`` slots."""
GGUF_MAGIC = b"GGUF"
"""The first four bytes of every GGUF file."""
HEALTH_TIMEOUT = 180.0
BUSY_HEALTH_TIMEOUT = 30.0
"""How long a live recorded server may take to answer /health before it counts as not running."""


@dataclass(frozen=True, slots=True)
class ServerState:
    """What ``serve`` records so ``stop`` and ``status`` can find the server."""

    model: str
    """Model key (``0.5b``/``1.5b``)."""
    model_id: str
    """Model id clients send (informational; llama-server serves one model)."""
    pid: int
    """Process id (leader of its own process group)."""
    port: int
    """Loopback port."""
    log: str
    """Server log file."""
    weights: str = ""
    """The GGUF it serves (empty in records written before it was kept)."""
    gpu_layers: int | None = None
    """``--n-gpu-layers`` it was started with (None: not passed, llama.cpp's default)."""
    parallel: int = 1
    """Slots (``-np``): requests it serves at once, each with the whole 8k context."""

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL (``.../v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"


@dataclass(frozen=True, slots=True)
class ServedModel:
    """What one local server serves: an installed model or a GGUF file the user named."""

    key: str
    """Name of its record (``server-<key>.json``): ``0.5b``/``1.5b``, or ``file-<hash of the path>``."""
    model_id: str
    """The id clients send and the server reports (``--alias``)."""
    weights: Path | None
    """The GGUF file; None for an installed model (its verified weights, installed on first use)."""
    gpu_layers: int | None = None
    """Layers to offload to a GPU (``--n-gpu-layers``); None leaves the flag out."""
    parallel: int = 1
    """Slots (``-np``) it needs at least: ``codeloop batch --workers N`` shares one server among
    N sessions, so it asks for N (issue 39); a server with more slots serves fewer as well."""


def embedded_model(model: str, gpu_layers: int | None = None) -> ServedModel:
    """The installed model ``model`` (``0.5b``/``1.5b``); LocalModelError for another name."""
    return ServedModel(model, spec_for(model).model_id, None, gpu_layers)


def model_file(path: str | Path, gpu_layers: int | None = None) -> ServedModel:
    """Any local GGUF file, checked before a server is started for it: it must exist, be
    readable and start with the GGUF magic. LocalModelError (one line) otherwise."""
    given = Path(path).expanduser()
    if gpu_layers is not None and gpu_layers < 0:
        raise LocalModelError(f"--gpu-layers must be 0 or more, not {gpu_layers}")
    try:
        resolved = given.resolve(strict=True)
        with open(resolved, "rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except FileNotFoundError:
        raise LocalModelError(f"model file {str(given)!r} does not exist: pass the path of a .gguf file") from None
    except IsADirectoryError:
        raise LocalModelError(f"model file {str(given)!r} is a directory: pass the path of a .gguf file") from None
    except OSError as exc:
        raise LocalModelError(f"model file {str(given)!r} cannot be read: {exc.strerror}") from None
    if magic != GGUF_MAGIC:
        raise LocalModelError(f"model file {str(given)!r} is not a GGUF file (it does not start with "
                              "'GGUF'); llama-server serves GGUF models only")
    # One record per file: two files served at once each keep their own server.
    key = "file-" + hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    return ServedModel(key, resolved.stem, resolved, gpu_layers)


def server_argv(binary: Path, weights: Path, port: int, model_id: str, gpu_layers: int | None,
                parallel: int = 1) -> list[str]:
    """The llama-server command line for ``weights`` on ``127.0.0.1:port`` with ``parallel``
    slots of :data:`CONTEXT_PER_SLOT` tokens each."""
    offload = ["--n-gpu-layers", str(gpu_layers)] if gpu_layers is not None else []
    return [str(binary), "-m", str(weights), "--host", "127.0.0.1", "--port", str(port),
            "--alias", model_id, *SERVER_FLAGS, "-c", str(CONTEXT_PER_SLOT * parallel), "-np", str(parallel),
            *offload]


def _stderr(message: str) -> None:
    print(f"local-llm: {message}", file=sys.stderr, flush=True)


def _state_file(model: str, base: Path) -> Path:
    return base / f"server-{model}.json"


def read_state(model: str, base: Path | None = None) -> ServerState | None:
    """The recorded server for ``model``, or None (a corrupt record counts as none)."""
    path = _state_file(model, base or models_dir())
    try:
        return ServerState(**json.loads(path.read_text("utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is a llama-server (guards against pid reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"llama-server" in cmdline


def healthy(port: int, timeout: float = 2.0) -> bool:
    """True when ``GET /health`` answers 200 (model loaded)."""
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


NO_REPACK = "--no-repack"
"""llama-server's switch that keeps weights as stored instead of repacking them for the CPU."""


class _CrashedWhileLoading(LocalModelError):
    """llama-server was killed by a signal before it became healthy."""

    def __init__(self, message: str, returncode: int) -> None:
        super().__init__(message)
        self.returncode = returncode


def _launch(argv: list[str], served: ServedModel, port: int, log_path: Path, weights: Path) -> ServerState:
    """Start ``argv`` and wait until the server is healthy; :class:`_CrashedWhileLoading` when a
    signal ends it first, :class:`LocalModelError` for any other exit or a timeout."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    state = ServerState(served.key, served.model_id, proc.pid, port, str(log_path), str(weights), served.gpu_layers,
                        served.parallel)
    deadline = time.monotonic() + HEALTH_TIMEOUT
    while not healthy(port):
        if proc.poll() is not None:
            tail = log_path.read_text("utf-8", "replace")[-800:]
            message = f"llama-server exited with {proc.returncode} while loading; log tail:\n{tail}"
            if proc.returncode < 0 and NO_REPACK not in argv:
                raise _CrashedWhileLoading(message, proc.returncode)
            raise LocalModelError(message)
        if time.monotonic() > deadline:
            _kill(proc.pid)
            raise LocalModelError(f"llama-server not healthy after {HEALTH_TIMEOUT:.0f} s; see {log_path}")
        time.sleep(0.25)
    return state


def start(model: str | ServedModel, port: int | None = None, progress: Progress = _stderr,
          base: Path | None = None) -> ServerState:
    """Start llama-server for ``model`` (an installed model's name, or a :class:`ServedModel`)
    and wait until it is healthy."""
    base = base or models_dir()
    served = embedded_model(model) if isinstance(model, str) else model
    binary = server_binary(base)
    weights = served.weights or weights_path(served.key, base)
    if served.weights is None and (binary is None or weights is None):
        raise LocalModelError(f"model {served.key} is not installed; run: scripts/local-llm install --model {served.key}")
    if binary is None or weights is None:
        raise LocalModelError("llama-server is not installed; run: scripts/local-llm install")
    port = port or _free_port()
    log_path = base / f"server-{served.key}.log"
    progress(f"starting llama-server for {served.model_id} on 127.0.0.1:{port} (log: {log_path})")
    argv = server_argv(binary, weights, port, served.model_id, served.gpu_layers, served.parallel)
    try:
        state = _launch(argv, served, port, log_path, weights)
    except _CrashedWhileLoading as crash:
        # Seen on a Firecracker VM whose CPU reports AVX-512: llama.cpp's weight repacking for
        # that ISA dies with SIGILL/SIGSEGV right after "threadpool init"; without repacking the
        # same build serves. A crash by a signal while loading is retried once without it.
        progress(f"llama-server died with signal {-crash.returncode} while loading; retrying with --no-repack")
        state = _launch([*argv, NO_REPACK], served, port, log_path, weights)
    tmp = _state_file(served.key, base).with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state)), "utf-8")
    os.replace(tmp, _state_file(served.key, base))
    progress(f"ready: {state.base_url}")
    return state


def running(model: str, base: Path | None = None) -> ServerState | None:
    """The recorded server for ``model`` when it is alive and healthy."""
    state = read_state(model, base)
    if state is None or not _alive(state.pid):
        return None
    # A server starved of CPU (a loaded 2-core machine, its one slot generating) can take more
    # than a couple of seconds to answer /health. Taken for dead, a second server was started
    # over its record and the first ran on unrecorded, never stopped (seen in test runs).
    if healthy(state.port) or healthy(state.port, timeout=BUSY_HEALTH_TIMEOUT):
        return state
    return None


def _kill(pid: int, grace: float = 5.0) -> None:
    """SIGTERM the process group, then SIGKILL after ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while _alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(model: str, base: Path | None = None) -> bool:
    """Stop ``model``'s server if one is recorded; True when one was running."""
    base = base or models_dir()
    state = read_state(model, base)
    was_running = state is not None and _alive(state.pid)
    if state is not None and was_running:
        _kill(state.pid)
    _state_file(model, base).unlink(missing_ok=True)
    return was_running


def recorded_keys(base: Path | None = None) -> list[str]:
    """The installed models' names and the keys of every server record (model files included)."""
    records = (base or models_dir()).glob("server-*.json")
    return sorted({*MODELS, *(path.stem.removeprefix("server-") for path in records)})


def ensure_local_server(model: str | ServedModel = "0.5b", progress: Progress = _stderr) -> str:
    """Base URL of a healthy local server for ``model`` (an installed model's name or a
    :class:`ServedModel`), installing/starting as needed."""
    return serving(embedded_model(model) if isinstance(model, str) else model, progress).base_url


def serving(served: ServedModel, progress: Progress = _stderr, port: int | None = None) -> ServerState:
    """The healthy server of ``served``, started (after installing what it needs) when none
    runs. A running one started with other ``--n-gpu-layers`` is restarted with the asked ones."""
    state = running(served.key)
    if state is not None and state.gpu_layers == served.gpu_layers and state.parallel >= served.parallel:
        return state
    if state is not None and state.gpu_layers == served.gpu_layers:
        progress(f"restarting llama-server for {served.model_id} with {served.parallel} slots (it has {state.parallel})")
    elif state is not None:
        progress(f"restarting llama-server for {served.model_id}: it runs with --n-gpu-layers "
                 f"{state.gpu_layers if state.gpu_layers is not None else '(default)'}, "
                 f"{served.gpu_layers if served.gpu_layers is not None else 'the default'} asked")
    if served.weights is None:
        install(served.key, progress)
    else:
        install_server(progress)
    stop(served.key)  # clear a stale record (dead or unhealthy server), or the one restarted
    return start(served, port, progress)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="local-llm",
        description="Install and run a local Qwen2.5-Coder model behind llama.cpp's llama-server on 127.0.0.1.",
        epilog="Example: scripts/local-llm serve --model 0.5b   (prints http://127.0.0.1:PORT/v1)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in [
        ("install", "build llama-server and download + verify the weights (idempotent)"),
        ("serve", "start the server (installing first if needed) and print its base URL"),
        ("stop", "stop the server(s) started by serve"),
        ("status", "print the running server's base URL; exit 1 when none is running"),
    ]:
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        cmd.add_argument("--model", choices=sorted(MODELS), default=None if name in ("stop", "status") else "0.5b",
                         help="model size (default 0.5b; stop/status: all)")
        cmd.add_argument("--json", action="store_true", help="machine-readable output on stdout")
        if name == "serve":
            cmd.add_argument("--port", type=int, default=None, help="port (default: a free one)")
            cmd.add_argument("--model-file", metavar="PATH.gguf", default=None,
                             help="serve this GGUF file instead of an installed model")
            cmd.add_argument("--gpu-layers", type=int, metavar="N", default=None,
                             help="layers to offload to a GPU (llama-server's --n-gpu-layers)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; errors are one line on stderr and exit code 1."""
    args = _parser().parse_args(argv)
    models = [args.model] if args.model else recorded_keys()
    try:
        if args.command == "install":
            binary, weights = install(args.model, _stderr)
            _emit(args.json, {"binary": str(binary), "weights": str(weights)}, str(weights))
        elif args.command == "serve":
            served = (model_file(args.model_file, args.gpu_layers) if args.model_file
                      else embedded_model(args.model, args.gpu_layers))
            state = serving(served, _stderr, args.port)
            _emit(args.json, {**asdict(state), "base_url": state.base_url}, state.base_url)
        elif args.command == "stop":
            stopped = [m for m in models if stop(m)]
            _emit(args.json, {"stopped": stopped}, f"stopped: {', '.join(stopped) or 'nothing was running'}")
        else:
            states = [s for s in (running(m) for m in models) if s is not None]
            _emit(args.json, {"running": [{**asdict(s), "base_url": s.base_url} for s in states]},
                  "\n".join(s.base_url for s in states) or "not running")
            return 0 if states else 1
    except LocalModelError as exc:
        print(f"local-llm: error: {exc}", file=sys.stderr)
        return 1
    return 0


def _emit(as_json: bool, data: dict[str, object], text: str) -> None:
    print(json.dumps(data) if as_json else text)


if __name__ == "__main__":
    sys.exit(main())
