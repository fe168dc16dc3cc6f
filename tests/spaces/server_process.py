"""Start ``codeloop spaces serve`` as a real process on a free loopback port (test helper)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


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

    def start(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            self._cli("serve", "--port", str(self.port), "--data-dir", str(self.data_dir), *self.extra),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode() if self.proc.stderr else ''}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("server did not become healthy in 30 s")

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
        extra = [a for a in self.extra if a.startswith("--database")]
        db = list(self.extra[self.extra.index("--database"):self.extra.index("--database") + 2]) if extra else []
        out = subprocess.run(self._cli("keys", "create", "--name", name, "--data-dir", str(self.data_dir), *db,
                                       "--json"), capture_output=True, text=True, check=True, timeout=60)
        return str(json.loads(out.stdout)["key"])
