"""Start ``codeloop spaces serve`` as a real process on a free loopback port (test helper)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from codeloop.spaces.database import open_store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """One server process; ``restart()`` stops it and starts another on the same port and store."""

    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.data_dir = data_dir
        self.extra = extra
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr = ""
        """What the last stopped process wrote to stderr."""

    def _cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "codeloop.cli.main", "spaces", *args]

    def start(self, timeout_s: float = 30) -> ServerProcess:
        self.proc = subprocess.Popen(
            self._cli("serve", "--port", str(self.port), "--data-dir", str(self.data_dir), *self.extra),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode() if self.proc.stderr else ''}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"server did not become healthy in {timeout_s} s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc and self.proc.stderr:
            self.stderr = self.proc.stderr.read().decode(errors="replace")
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def create_key(self, name: str = "test") -> str:
        """A new API key in the server's store (written directly; the CLI path has its own test)."""
        db = self.extra[self.extra.index("--database") + 1] if "--database" in self.extra else None
        store = open_store(db, self.data_dir)
        try:
            return store.create_key(name)[1]
        finally:
            store.close()
