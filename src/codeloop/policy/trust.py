"""Which repository configuration the user trusts (issue 22, class 9; docs/security.md).

A cloned repository's ``.codeloop/`` files are written by whoever wrote the repository (or
by the agent). Settings in them that lower safety, send the API key elsewhere or start
programs apply only once the user has trusted that exact content with ``codeloop trust``:
the file's sha256 is stored outside every repository, in ``trusted.json`` of the user's
config directory (``$CODELOOP_CONFIG_DIR`` replaces it). A change of one byte asks again.

Trust is keyed on the file itself, by its path in the repository, never by where a link
leads; and the files are read only when they are regular files inside the repository
(:func:`codeloop.environments.safe_open.read_owned_file`), so a repository cannot borrow
another's trust by linking to its config (issue 32).
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


def _key(path: Path, root: Path | None) -> str:
    """The file itself, never where a link leads: the repository ``root`` resolved (a
    checkout reached through a linked directory is the same checkout), then the file's name
    inside it as written. Without ``root``, the file's directory is resolved. So a config
    that is a link to a trusted repository's config is another file, trusted only when the
    user trusts it (issue 32)."""
    absolute = os.path.abspath(path)
    if root is None:
        return os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))
    top = os.path.abspath(root)
    rel = os.path.relpath(absolute, top)
    if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
        raise ValueError(f"{path} is not inside the repository {root}")
    return os.path.join(os.path.realpath(top), rel)


def _load() -> dict[str, str]:
    try:
        data = json.loads(trust_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no file or a damaged one: nothing is trusted, which is the safe side
    files = data.get("files") if isinstance(data, dict) else None
    return {k: v for k, v in files.items() if isinstance(v, str)} if isinstance(files, dict) else {}


def content_hash(content: bytes) -> str:
    """How trusted content is recorded: its sha256, in hex."""
    return hashlib.sha256(content).hexdigest()


def is_trusted(path: Path, content: bytes, root: Path | None = None) -> bool:
    """True when the user trusted exactly ``content`` for the file at ``path`` of the
    repository ``root`` (the file as named, not a link's target: see :func:`_key`)."""
    return _load().get(_key(path, root)) == content_hash(content)


def trust(path: Path, content: bytes, root: Path | None = None) -> str:
    """Record that the user trusts ``content`` for the file at ``path`` of the repository
    ``root`` (replacing an older hash); return the path recorded."""
    files = _load()
    key = _key(path, root)
    files[key] = content_hash(content)
    target = trust_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, (json.dumps({"version": 1, "files": files}, indent=1, sort_keys=True) + "\n").encode())
    return key


def untrusted_warning(path: Path, what: str, workspace: Path) -> str:
    """The warning shown when ``what`` in ``path`` is ignored until trusted."""
    return (f"{path}: ignored {what} until you trust this file: review it, then run "
            f"'codeloop trust {workspace}' (a repository's .codeloop/ may not lower safety, "
            "redirect your API key or start programs on its own)")
