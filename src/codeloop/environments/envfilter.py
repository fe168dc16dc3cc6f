"""Which host environment variables a command sees (loop spec §4.2).

Policies (``EnvPolicy``):

- ``inherit-all`` (default): everything except secrets, i.e. names ending in ``_API_KEY``,
  ``_SECRET``, ``_TOKEN``, ``_PASSWORD`` or ``_CREDENTIAL`` (case-insensitive; the bare
  names ``API_KEY``, ``SECRET``, ``TOKEN``, ``PASSWORD``, ``CREDENTIAL`` too).
- ``core-only``: only :data:`CORE_VARIABLES` (and ``LC_*`` locale settings).
- ``none``: nothing; the command starts from an empty environment (pass what it needs in
  ``env_vars``).

The core variables are never dropped by the secret filter, so ``inherit-all`` and
``core-only`` always carry them when the host has them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from codeloop.environments.base import EnvPolicy

SECRET_SUFFIXES: tuple[str, ...] = ("_API_KEY", "_SECRET", "_TOKEN", "_PASSWORD", "_CREDENTIAL")
"""Name endings of variables that are never passed to a command (compared upper-cased)."""

CORE_VARIABLES: frozenset[str] = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ",
        "PWD", "COLORTERM",
        # Language toolchains: where compilers, packages and version managers live.
        "GOPATH", "GOROOT", "GOBIN", "GOMODCACHE", "GOCACHE",
        "CARGO_HOME", "RUSTUP_HOME",
        "NVM_DIR", "NVM_BIN", "NODE_PATH", "NPM_CONFIG_PREFIX", "PNPM_HOME", "BUN_INSTALL", "DENO_DIR",
        "PYENV_ROOT", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH",
        "UV_CACHE_DIR", "PIP_CACHE_DIR", "POETRY_HOME",
        "JAVA_HOME", "GRADLE_HOME", "MAVEN_HOME", "M2_HOME",
        "GEM_HOME", "GEM_PATH", "RBENV_ROOT", "RUBY_HOME",
        "DOTNET_ROOT", "ANDROID_HOME", "ANDROID_SDK_ROOT", "FLUTTER_ROOT",
        "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
    }
)
"""Variables kept by ``core-only`` and never treated as secrets (spec §4.2 "always include")."""


_SECRET_NAME = re.compile(
    "(?:^|_)(?:" + "|".join(suffix[1:] for suffix in SECRET_SUFFIXES) + ")$", re.IGNORECASE
)


def is_secret_name(name: str) -> bool:
    """True when ``name`` looks like it holds a credential (spec §4.2 patterns)."""
    return _SECRET_NAME.search(name) is not None and name.upper() not in CORE_VARIABLES


def _is_core(name: str) -> bool:
    return name in CORE_VARIABLES or name.startswith("LC_")


def filter_environment(environ: Mapping[str, str], policy: EnvPolicy = "inherit-all") -> dict[str, str]:
    """Return the variables of ``environ`` a command may see under ``policy`` (spec §4.2).

    Raises ``ValueError`` for an unknown policy name.
    """
    if policy == "inherit-all":
        return {k: v for k, v in environ.items() if not is_secret_name(k)}
    if policy == "core-only":
        return {k: v for k, v in environ.items() if _is_core(k)}
    if policy == "none":
        return {}
    raise ValueError(f"Unknown environment policy {policy!r}; use 'inherit-all', 'core-only' or 'none'")
