"""Helpers for relay tests: run the real installed ``codeloop`` command (fixture in conftest)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

_SCRIPT = Path(sys.executable).parent / "codeloop"
CODELOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "codeloop.cli.main"]

Run = Callable[..., subprocess.CompletedProcess[str]]


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without relay settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODELOOP_RELAY_")}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    env.update(extra)
    return env


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(proc.stdout)
