"""Which repository configuration the user trusts (issue 22, class 9; docs/security.md).

A cloned repository's ``.codeloop/`` files are written by whoever wrote the repository (or
by the agent). Settings in them that lower safety, send the API key elsewhere or start
programs apply only once the user has trusted that exact content with ``codeloop trust``:
the file's sha256 is stored outside every repository, in ``trusted.json`` of the user's
config directory (``$CODELOOP_CONFIG_DIR`` replaces it). A change of one byte asks again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import platformdirs

from codeloop.environments.atomic import atomic_write

CONFIG_DIR_VARIABLE = "CODELOOP_CONFIG_DIR"
"""Environment variable that replaces the user config directory."""


def user_config_dir() -> Path:
    """The user's codeloop config directory (may not exist)."""
    return Path(os.environ.get(CONFIG_DIR_VARIABLE) or platformdirs.user_config_dir("codeloop"))


def trust_file() -> Path:
    """Where the trusted contents' hashes are kept."""
    return user_config_dir() / "trusted.json"


def _key(path: Path) -> str:
    return str(Path(path).absolute().resolve())


def _load() -> dict[str, str]:
    try:
        data = json.loads(trust_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no file or a damaged one: nothing is trusted, which is the safe side
    files = data.get("files") if isinstance(data, dict) else None
    return {k: v for k, v in files.items() if isinstance(v, str)} if isinstance(files, dict) else {}


def is_trusted(path: Path, content: bytes) -> bool:
    """True when the user trusted exactly ``content`` for the file at ``path``."""
    return _load().get(_key(path)) == hashlib.sha256(content).hexdigest()


def trust(path: Path, content: bytes) -> None:
    """Record that the user trusts ``content`` for the file at ``path`` (replacing an older hash)."""
    files = _load()
    files[_key(path)] = hashlib.sha256(content).hexdigest()
    target = trust_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, (json.dumps({"version": 1, "files": files}, indent=1, sort_keys=True) + "\n").encode())


def untrusted_warning(path: Path, what: str, workspace: Path) -> str:
    """The warning shown when ``what`` in ``path`` is ignored until trusted."""
    return (f"{path}: ignored {what} until you trust this file: review it, then run "
            f"'codeloop trust {workspace}' (a repository's .codeloop/ may not lower safety, "
            "redirect your API key or start programs on its own)")
