"""Shared fixtures of the LLM tests.

``local_llm`` (session scope) gives the e2e tests a real llama.cpp server with the 0.5B
model: it reuses a server already started by ``scripts/local-llm serve``, or starts one
and stops it when the last user is done. pytest-xdist workers share one server through a
lock and a user count in the models directory. When the binary or the weights are not
installed, every test using it is skipped with the command that installs them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeloop.llm.adapters.base import AdapterTimeout
from codeloop.llm.llama_install import LocalModelError, models_dir, server_binary, spec_for, weights_path
from codeloop.llm.llama_server import running, start, stop

E2E_MODEL = "0.5b"
E2E_TIMEOUT = AdapterTimeout(connect=10.0, request=900.0, stream_read=600.0)
"""Generous: the 2-core CI box is shared, and a 200-token prompt can take a minute under load."""


@dataclass(frozen=True)
class LocalLLM:
    """A running llama-server for e2e tests."""

    base_url: str
    """``http://127.0.0.1:PORT/v1`` (Chat Completions, Responses: ``/v1/responses``)."""
    root_url: str
    """``http://127.0.0.1:PORT`` (Anthropic Messages lives at ``/v1/messages``)."""
    model: str
    """The model id the server reports."""
    timeout: AdapterTimeout
    """Adapter timeouts suited to a loaded CPU-only box."""


@contextlib.contextmanager
def _locked(base: Path) -> Iterator[Path]:
    """Hold the cross-process lock guarding the user counts; yields the directory."""
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".e2e.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield base
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read_users(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text("utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def _shared_server(model: str) -> Iterator[LocalLLM]:
    base = models_dir()
    if server_binary(base) is None or weights_path(model, base) is None:
        pytest.skip(f"local model {model} not installed in {base}: run `scripts/local-llm install --model {model}`")
    users_name = f".e2e-users-{model}.json"
    with _locked(base) as lock_dir:
        users_file = lock_dir / users_name
        users = _read_users(users_file)
        state = running(model, base)
        if state is None:
            try:
                state = start(model, progress=lambda _msg: None, base=base)
            except LocalModelError as exc:
                pytest.skip(f"local llama-server for {model} could not start: {exc}")
            users = {"count": 0, "started_by_tests": True}
        count = int(users.get("count", 0) or 0) + 1  # type: ignore[call-overload]
        users_file.write_text(json.dumps({**users, "count": count}), "utf-8")
    try:
        yield LocalLLM(state.base_url, f"http://127.0.0.1:{state.port}", spec_for(model).model_id, E2E_TIMEOUT)
    finally:
        with _locked(base) as lock_dir:
            users_file = lock_dir / users_name
            users = _read_users(users_file)
            count = max(0, int(users.get("count", 1) or 1) - 1)  # type: ignore[call-overload]
            if count == 0:
                if users.get("started_by_tests"):
                    stop(model, base)
                users_file.unlink(missing_ok=True)
            else:
                users_file.write_text(json.dumps({**users, "count": count}), "utf-8")


@pytest.fixture(scope="session")
def local_llm() -> Iterator[LocalLLM]:
    """The 0.5B model's server (``e2e`` tests: wire behaviour only)."""
    with _shared_server(E2E_MODEL) as server:
        yield server


@pytest.fixture(scope="session")
def local_llm_15b() -> Iterator[LocalLLM]:
    """The 1.5B model's server (``e2e_slow`` tests that depend on the model's choices)."""
    with _shared_server("1.5b") as server:
        yield server
