"""Relay settings: directories and limits from flags, environment, a config file, defaults.

Precedence, highest first: command-line flags, ``CODELOOP_RELAY_*`` environment
variables, the config file (``--config``, ``CODELOOP_RELAY_CONFIG``, or ``relay.toml`` in
the root when it exists), built-in defaults. Relative directories in the config file are
relative to the root; on the command line and in the environment, to the current
directory.

Config file (TOML), every key optional::

    workspace = "workspace"       # only used by 'relay new'
    inbox = "inbox"
    outbox = "outbox"
    sessions = "sessions"
    timeout = 30                  # seconds per RUN_COMMAND
    output_limit = 4000           # characters of command output kept
    max_listed_files = 2000       # files listed in an outbox (0 = all)
    max_read_chars = 100000       # characters of a READ_FILE shown (0 = all)
    clipboard = true              # copy each new outbox to the clipboard when possible
    policy = "permissive"         # only used by 'relay new': the session keeps its policy
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from codeloop.environments.errors import WorkspaceError
from codeloop.environments.owned_files import read_owned_file
from codeloop.policy import PRESET_NAMES

N = TypeVar("N", int, float)
ENV_PREFIX = "CODELOOP_RELAY_"
CONFIG_FILE_NAME = "relay.toml"

_INT_KEYS = {"output_limit": 0, "max_listed_files": 0, "max_read_chars": 0}
_DIR_KEYS = ("workspace", "inbox", "outbox", "sessions")
_KEYS = (*_DIR_KEYS, "timeout", *_INT_KEYS, "clipboard", "policy")
_SWITCH = dict.fromkeys(("1", "true", "yes", "on"), True) | dict.fromkeys(("0", "false", "no", "off"), False)
_FIELDS = {"timeout": "timeout_ms", "output_limit": "output_limit_chars"}
"""The RelayConfig field of a setting whose name differs."""

DEFAULT_POLICY = "permissive"
"""The policy of a new session: runs what the relay always ran except privilege escalation
(sudo, su, ...), wiping the disk, git hook writes and lines it cannot judge (docs/relay.md)."""


class RelayConfigError(ValueError):
    """A setting is invalid; the message names it, where it came from, and the fix."""


@dataclass(frozen=True)
class RelayConfig:
    """Where the relay keeps its files and how it limits commands."""

    root: Path
    """The relay root (absolute)."""
    inbox_dir: Path
    """Where the user saves replies (default ``ROOT/inbox``)."""
    outbox_dir: Path
    """Where outboxes are written (default ``ROOT/outbox``)."""
    sessions_dir: Path
    """Session JSON files and step journals (default ``ROOT/sessions``)."""
    workspace: Path
    """Workspace for a new session (default ``ROOT/workspace``); a session keeps its own."""
    timeout_ms: int = 30_000
    """RUN_COMMAND time limit (spec: 30 s)."""
    output_limit_chars: int = 4000
    """RUN_COMMAND output kept (spec: 4000 characters)."""
    max_listed_files: int = 2000
    """Files listed in ``## Workspace Files``; 0 lists all."""
    max_read_chars: int = 100_000
    """Characters of one requested file shown; 0 shows all."""
    clipboard: bool = True
    """Copy each new outbox to the clipboard when a clipboard tool exists."""
    policy: str = DEFAULT_POLICY
    """Policy preset of a new session (``codeloop.policy.preset``); a session keeps its own."""

    @property
    def processing_dir(self) -> Path:
        """Replies claimed by a step that has not finished yet."""
        return self.inbox_dir / "processing"

    @property
    def processed_dir(self) -> Path:
        """Replies whose step has finished."""
        return self.inbox_dir / "processed"

    @property
    def rejected_dir(self) -> Path:
        """Inbox files that could not be read as text, each with a ``.note`` saying why."""
        return self.inbox_dir / "rejected"

    @property
    def journal_dir(self) -> Path:
        """Step journals, one per answered outbox."""
        return self.sessions_dir / "journal"

    def ensure_dirs(self) -> None:
        """Create every directory the relay writes to."""
        for d in self.inbox_dir, self.outbox_dir, self.sessions_dir, self.processing_dir, self.processed_dir:
            d.mkdir(parents=True, exist_ok=True)


MAX_COUNT = 1_000_000_000
"""Largest value of a count setting (characters, files): more than any outbox could hold."""


def _number(convert: Callable[[Any], N], value: Any, refused: Any) -> N | None:
    """``convert(value)``, or None when it fails or ``value`` is of a ``refused`` type."""
    try:
        return None if isinstance(value, refused) else convert(value)
    except (TypeError, ValueError):
        return None


def _parse_value(key: str, value: Any, source: str) -> Any:
    if key in _DIR_KEYS:
        if not isinstance(value, str) or not value.strip():
            raise RelayConfigError(f"{source}: {key} must be a directory path")
        return value
    if key == "timeout":
        seconds = _number(float, value, bool)
        if seconds is None or not 0 < seconds <= 600:
            raise RelayConfigError(
                f"{source}: timeout must be a number of seconds between 0 and 600, got {value!r}"
            )
        return int(seconds * 1000)
    if key in _INT_KEYS:
        number = _number(int, value, bool | float)
        if number is None or not 0 <= number <= MAX_COUNT:
            raise RelayConfigError(f"{source}: {key} must be a whole number from 0 to {MAX_COUNT}, got {value!r}")
        return number
    if key == "clipboard":
        answer = value if isinstance(value, bool) else _SWITCH.get(str(value).strip().lower())
        if answer is not None:
            return answer
        raise RelayConfigError(f"{source}: clipboard must be true or false, got {value!r}")
    if key == "policy":
        if value not in PRESET_NAMES:
            raise RelayConfigError(f"{source}: policy must be one of {', '.join(PRESET_NAMES)}, got {value!r}")
        return value
    raise RelayConfigError(f"{source}: unknown setting {key!r}; known settings: {', '.join(_KEYS)}")


def _read_config_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(read_owned_file(path, max_bytes=1024 * 1024).decode("utf-8"))
    except FileNotFoundError:
        raise RelayConfigError(f"config file {path} does not exist; create it or drop --config") from None
    except (OSError, UnicodeDecodeError, WorkspaceError) as exc:
        raise RelayConfigError(f"cannot read config file {path}: {exc}") from None
    except (tomllib.TOMLDecodeError, ValueError) as exc:  # ValueError: a number of over 4300 digits
        raise RelayConfigError(f"config file {path} is not valid TOML: {exc}") from None
    return {key: _parse_value(key, value, f"config file {path}") for key, value in data.items()}


def load_config(root: str | None, flags: Mapping[str, Any] | None = None, config_file: str | None = None,
                environ: Mapping[str, str] | None = None) -> RelayConfig:
    """Build the settings; ``flags`` holds only options given on the command line
    (keys as in the config file: ``inbox``, ``timeout`` in seconds, ...).

    Raises :class:`RelayConfigError` for any invalid value, naming its source.
    """
    environ = os.environ if environ is None else environ
    root_text = root or environ.get(ENV_PREFIX + "ROOT") or "."
    root_path = Path(root_text).expanduser().resolve()
    if root_path.exists() and not root_path.is_dir():
        raise RelayConfigError(f"relay root {root_path} is a file; give a directory with --root")

    settings: dict[str, Any] = {}
    sources: dict[str, Path] = {}
    file_text = config_file or environ.get(ENV_PREFIX + "CONFIG")
    file_path = Path(file_text).expanduser() if file_text else root_path / CONFIG_FILE_NAME
    if file_text or file_path.is_file():
        for key, value in _read_config_file(file_path).items():
            settings[key] = value
            if key in _DIR_KEYS:
                sources[key] = root_path
    for key in _KEYS:
        env_name = ENV_PREFIX + key.upper()
        if env_name in environ and environ[env_name] != "":
            settings[key] = _parse_value(key, environ[env_name], f"environment variable {env_name}")
            sources.pop(key, None)
    for key, value in (flags or {}).items():
        if value is not None:
            settings[key] = _parse_value(key, value, f"option --{key.replace('_', '-')}")
            sources.pop(key, None)

    def directory(key: str) -> Path:
        if key not in settings:
            return root_path / key
        base = sources.get(key, Path.cwd())
        return (base / Path(settings[key]).expanduser()).resolve()

    return RelayConfig(root=root_path, inbox_dir=directory("inbox"), outbox_dir=directory("outbox"),
                       sessions_dir=directory("sessions"), workspace=directory("workspace"),
                       **{_FIELDS.get(k, k): v for k, v in settings.items() if k not in _DIR_KEYS})
