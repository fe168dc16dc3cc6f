"""User and project configuration of ``codeloop run`` (issue 9; docs/config.md).

Two TOML files, the project's winning key by key: the user's
``platformdirs.user_config_dir("codeloop")/config.toml`` (``~/.config/codeloop/config.toml``
on Linux; ``$CODELOOP_CONFIG_DIR`` replaces the directory) and the workspace's
``.codeloop/config.toml``. Every key is checked: an unknown key, a wrong type or value, or
broken TOML raises :class:`ConfigError` naming the file, the line and the fix.

The project file comes with the repository, so it is not trusted: its ``sandbox = "off"``,
``approval = "never-ask"``, ``base_url``, ``model_file``, ``mcp_servers``, ``hooks`` and the commands of
``diagnostics`` are ignored (with a warning in ``CodeloopConfig.warnings``) until the user trusts
that exact content with ``codeloop trust`` (:mod:`codeloop.policy.trust`).

::

    model = "qwen2.5-coder"        provider = "openai"      profile = "openai"
    base_url = "http://127.0.0.1:8080/v1"
    sandbox = "workspace-write"    approval = "on-risk"     max_turns = 50
    mode = "plan"                  # start codeloop run in plan mode (read only); "normal" is the default
    max_retries = 6                # retries of one model call after a 429/5xx/dropped connection
    max_cost = 2.50                # budgets (docs/agent.md "Budgets"): USD at list price,
    max_tokens = 2_000_000         # input + output tokens,
    max_time = "30m"               # and time ("90s", "5m", "1h30m" or seconds)
    model_file = "~/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf"   # serve this GGUF locally (absolute or ~)
    gpu_layers = 99                # the local llama-server's --n-gpu-layers
    candidates = 3                 # small-model strategy: drafts when the greedy one fails a check (1: greedy only)
    diagnostics = ["ruff check --quiet {file}"]   # after each edit: docs/tools.md; codeloop.tools.diagnostics
    # or [{ command = "...", paths = ["*.py"], timeout = 30 }]; false: no diagnostics after edits

    [mcp_servers.files]            # stdio
    command = "python"
    args = ["-m", "my_server"]
    env = { TOKEN = "..." }
    timeout = 30                   # seconds per call (default 60)

    [mcp_servers.web]              # streamable HTTP
    url = "http://127.0.0.1:9000/mcp"

    [snapshots]                    # undo of every change, shell too (docs/sessions.md)
    exclude_dirs = [".venv", "node_modules", "target"]   # directory names never snapshotted
    max_file_mb = 16               # larger files are not snapshotted
    keep_days = 30                 # snapshots pruned by age
    keep_count = 5000              # and beyond this many per workspace
    enabled = true                 # false: only codeloop's file tools are undoable

    [[hooks]]                      # docs/hooks.md; codeloop.tools.hooks
    event = "post_tool_call"       # session_start, user_prompt, pre_tool_call, post_tool_call, stop
    command = "ruff format --quiet ."
    tools = ["write_file", "edit_file"]
    paths = ["*.py"]

The approval modes and remembered approvals live in :mod:`codeloop.policy.approval_modes`.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codeloop.environments.errors import WorkspaceError
from codeloop.environments.owned_files import read_owned_file
from codeloop.policy.approval_modes import APPROVAL_MODES as APPROVAL_MODES  # re-exported
from codeloop.policy.trust import is_trusted, untrusted_warning, user_config_dir
from codeloop.tools.diagnostics import DEFAULT_DIAGNOSTIC_TIMEOUT, DiagnosticCommand
from codeloop.tools.hooks import DEFAULT_HOOK_TIMEOUT, HOOK_EVENTS, TOOL_EVENTS, Hook

SANDBOX_MODES = ("read-only", "workspace-write", "off")
_ACCEPTED_SANDBOX = (*SANDBOX_MODES, "full")
"""``full`` is the deprecated name of ``off`` (no sandbox): accepted, and codeloop run warns."""
PROFILES = ("openai", "anthropic", "gemini", "text")
MODES = ("normal", "plan")


class ConfigError(ValueError):
    """A config file is malformed; the message names the file, line/key and the fix."""


@dataclass(frozen=True)
class McpServerConfig:
    """One ``[mcp_servers.NAME]`` table."""

    name: str
    """The server's name; its tools are registered as ``NAME__tool``."""
    command: str | None = None
    """Program to start for a stdio server (with ``args`` and extra ``env``)."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    """Endpoint of a streamable HTTP server (instead of ``command``)."""
    timeout: float = 60.0
    """Seconds a start or a tool call may take before it fails."""


@dataclass(frozen=True)
class CodeloopConfig:
    """The merged configuration; ``None`` means "not set" (the CLI's default applies). The
    keys are those of the file (module docstring; docs/config.md)."""

    model: str | None = None
    provider: str | None = None
    profile: str | None = None
    base_url: str | None = None
    sandbox: str | None = None
    approval: str | None = None
    max_turns: int | None = None
    """Turn limit of a session (0: none)."""
    max_retries: int | None = None
    """Retries of one model call after a transient failure (0: none)."""
    max_cost: float | None = None
    """Budget in USD at list price (issue 36)."""
    max_tokens: int | None = None
    """Budget of input + output tokens."""
    max_time: str | float | None = None
    """Time budget: a duration (``"30m"``) or seconds."""
    mode: str | None = None
    """``plan`` (the agent may only read, ``codeloop run --plan``) or ``normal``."""
    mcp_servers: Mapping[str, McpServerConfig] = field(default_factory=dict)
    hooks: tuple[Hook, ...] = ()
    """``[[hooks]]`` of both files, the user's first."""
    diagnostics: bool | None = None
    """Diagnostics after edits on or off (``diagnostics = false``; a list of commands turns it on)."""
    diagnostic_commands: tuple[DiagnosticCommand, ...] = ()
    """The commands of ``diagnostics = [...]`` of both files, the user's first."""
    rescues: bool | None = None
    """The small-model rescues on or off (``rescues = false``; default: on for a small window)."""
    strategy: bool | None = None
    """The small-model strategy on or off (``strategy = false``; default: on for the local model)."""
    model_file: str | None = None
    """A GGUF file the local llama-server serves (``codeloop run --model-file``; absolute or ``~/``)."""
    gpu_layers: int | None = None
    """The local llama-server's ``--n-gpu-layers`` (``--gpu-layers``)."""
    candidates: int | None = None
    """Drafts of the small-model strategy when the greedy one fails a check, the greedy one
    included (``--candidates``; 1: the greedy draft only)."""
    snapshots: Mapping[str, Any] = field(default_factory=dict)
    """``[snapshots]`` of both files, the project's winning key by key (issue 35)."""
    sources: tuple[str, ...] = ()
    """The files that were read, lowest priority first."""
    warnings: tuple[str, ...] = ()
    """Settings of an untrusted project file that were ignored (show them to the user)."""


_STRING_KEYS = ("model", "provider", "profile", "base_url", "sandbox", "approval", "mode", "model_file")
_CHOICES = {"sandbox": _ACCEPTED_SANDBOX, "approval": APPROVAL_MODES, "profile": PROFILES, "mode": MODES}
_COUNT_KEYS = {"max_turns": "0: no limit", "max_retries": "0: never retry",
               "gpu_layers": "layers the local llama-server offloads to a GPU",
               "candidates": "drafts of the small-model strategy, the greedy one included"}
MAX_TURNS = 1_000_000
"""Largest turn limit (``max_turns``, ``--max-turns``); 0 means none."""
MAX_RETRIES = 100
"""Largest ``max_retries`` (``--max-retries``): the backoff grows, so more would wait for days."""
MAX_GPU_LAYERS = 10_000
"""Largest ``gpu_layers``: more than any model has (llama-server caps it at the model's count)."""
MAX_CANDIDATES = 16
"""Most drafts the small-model strategy makes of one step (each is a model call)."""
_COUNT_LIMITS = {"max_turns": MAX_TURNS, "max_retries": MAX_RETRIES, "gpu_layers": MAX_GPU_LAYERS,
                 "candidates": MAX_CANDIDATES}
_COUNT_MINIMUM = {"candidates": 1}
MAX_TIMEOUT_S = 86_400
"""Longest timeout of an MCP server, hook or diagnostics command (a day)."""
_BOOL_KEYS = ("rescues", "strategy")
_BUDGET_KEYS = ("max_cost", "max_tokens", "max_time")
_TOP_KEYS = (*_STRING_KEYS, *_COUNT_KEYS, *_BOOL_KEYS, *_BUDGET_KEYS, "mcp_servers", "hooks", "diagnostics",
             "snapshots")
_SNAPSHOT_LIMITS = {"max_file_mb": (1, 1_000_000, "megabytes"), "keep_days": (1, 36_500, "days"),
                    "keep_count": (1, 10_000_000, "snapshots per workspace")}
_SNAPSHOT_KEYS = ("exclude_dirs", *_SNAPSHOT_LIMITS, "enabled")
_SERVER_KEYS = ("command", "args", "env", "url", "timeout")
_HOOK_KEYS = ("event", "command", "timeout", "tools", "paths")
_DIAGNOSTIC_KEYS = ("command", "paths", "timeout")


def user_config_path() -> Path:
    """The user's config file (may not exist)."""
    return user_config_dir() / "config.toml"


def project_config_path(workspace: Path | str) -> Path:
    """The workspace's config file (may not exist)."""
    return Path(workspace) / ".codeloop" / "config.toml"


def _where(path: Path, text: str, key: str, section: str | None = None) -> str:
    """``path:line`` of ``key`` (in ``[section]``), or ``path`` when it cannot be found."""
    lines = text.splitlines()
    start = 0
    if section is not None:
        header = re.compile(r"^\s*\[\s*" + re.escape(section).replace(r"\.", r"\s*\.\s*") + r"\s*\]")
        start = next((i + 1 for i, line in enumerate(lines) if header.match(line)), 0)
    pattern = re.compile(r"^\s*\"?" + re.escape(key) + r"\"?\s*=")
    for i in range(start, len(lines)):
        if pattern.match(lines[i]):
            return f"{path}:{i + 1}"
        if section is not None and lines[i].lstrip().startswith("["):
            break
    return str(path)


def _unknown(path: Path, text: str, key: str, known: tuple[str, ...], section: str | None) -> ConfigError:
    # Two swapped letters first ('modle' is 'model', not 'mode'), then the closest spelling.
    close = [k for k in known if sorted(k) == sorted(key)] or difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
    where = f"[{section}] " if section else ""
    return ConfigError(f"{_where(path, text, key, section)}: unknown key {where}{key!r}; {hint} "
                       "(remove or rename it)")


def _positive_or_none(value: Any) -> bool:
    """None, or a number of seconds in (0, MAX_TIMEOUT_S] (a NaN is no number of seconds)."""
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool)
                             and 0 < value <= MAX_TIMEOUT_S)


def _parse_server(path: Path, text: str, name: str, table: Any) -> McpServerConfig:
    section = f"mcp_servers.{name}"
    if not isinstance(table, dict):
        raise ConfigError(f"{_where(path, text, name, 'mcp_servers')}: mcp_servers.{name} must be a table "
                          f"like [mcp_servers.{name}] with command = \"...\" or url = \"...\"")
    for key in table:
        if key not in _SERVER_KEYS:
            raise _unknown(path, text, key, _SERVER_KEYS, section)

    def bad(key: str, what: str) -> ConfigError:
        return ConfigError(f"{_where(path, text, key, section)}: [{section}] {key} must be {what}")

    command, args, env, url, timeout = (table.get(k) for k in _SERVER_KEYS)
    if command is not None and (not isinstance(command, str) or not command):
        raise bad("command", "a non-empty string (the program to start)")
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise bad("url", "an http:// or https:// URL string")
    if (command is None) == (url is None):
        raise ConfigError(f"{path}: [{section}] needs exactly one of command = \"...\" (stdio) "
                          "or url = \"http://...\" (streamable HTTP)")
    if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        raise bad("args", 'a list of strings, e.g. args = ["-m", "server"]')
    if env is not None and not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
        raise bad("env", 'a table of strings, e.g. env = { TOKEN = "..." }')
    if not _positive_or_none(timeout):
        raise bad("timeout", f"a positive number of seconds, at most {MAX_TIMEOUT_S}")
    return McpServerConfig(name=name, command=command, url=url, args=tuple(args or ()), env=dict(env or {}),
                           timeout=float(timeout) if timeout is not None else 60.0)


def _unknown_entry_key(table: dict[str, Any], known: tuple[str, ...]) -> str | None:
    """What is wrong with the first key of an entry's ``table`` not in ``known`` (None: none is)."""
    unknown = [k for k in table if k not in known]
    if not unknown:
        return None
    close = difflib.get_close_matches(unknown[0], known, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
    return f"has the unknown key {unknown[0]!r}; {hint} (remove or rename it)"


def _parse_hooks(path: Path, text: str, value: Any) -> tuple[Hook, ...]:
    headers = [i + 1 for i, line in enumerate(text.splitlines()) if re.match(r"^\s*\[\[\s*hooks\s*\]\]", line)]
    if not isinstance(value, list):
        raise ConfigError(f"{_where(path, text, 'hooks')}: hooks must be [[hooks]] tables, e.g.\n"
                          '[[hooks]]\nevent = "pre_tool_call"\ncommand = "./check.sh"')
    hooks = []
    for n, table in enumerate(value):
        where = f"{path}:{headers[n]}" if n < len(headers) else str(path)
        name = f"[[hooks]] #{n + 1}"

        def bad(what: str, name: str = name, where: str = where) -> ConfigError:
            return ConfigError(f"{where}: {name} {what} (see docs/hooks.md)")

        if not isinstance(table, dict):
            raise bad('must be a table with event = "..." and command = "..."')
        if unknown := _unknown_entry_key(table, _HOOK_KEYS):
            raise bad(unknown)
        event, command, timeout = table.get("event"), table.get("command"), table.get("timeout")
        if event not in HOOK_EVENTS:
            raise bad(f"needs event = one of {', '.join(HOOK_EVENTS)}" + (f", not {event!r}" if event else ""))
        if not isinstance(command, str) or not command.strip():
            raise bad('needs command = "..." (a shell line run in the workspace)')
        if not _positive_or_none(timeout):
            raise bad(f"timeout must be a positive number of seconds, at most {MAX_TIMEOUT_S}")
        matchers: dict[str, tuple[str, ...]] = {}
        for key in ("tools", "paths"):
            given = _patterns(table.get(key, []))
            if given is None:
                raise bad(f'{key} must be a list of patterns, e.g. {key} = ["{"shell" if key == "tools" else "*.py"}"]')
            if given and event not in TOOL_EVENTS:
                raise bad(f"{key} applies only to pre_tool_call and post_tool_call hooks; remove it")
            matchers[key] = given
        hooks.append(Hook(event, command, float(timeout) if timeout is not None else DEFAULT_HOOK_TIMEOUT,
                          source=where, **matchers))
    return tuple(hooks)


def _patterns(given: Any) -> tuple[str, ...] | None:
    """A pattern list (one string counts as a list of one), or None when it is not one."""
    given = [given] if isinstance(given, str) else given
    if not (isinstance(given, list) and all(isinstance(p, str) and p for p in given)):
        return None
    return tuple(given)


def _parse_snapshots(path: Path, text: str, table: Any) -> dict[str, Any]:
    """``[snapshots]``: what the undo snapshots leave out and how long they are kept."""
    if not isinstance(table, dict):
        raise ConfigError(f"{_where(path, text, 'snapshots')}: snapshots must be a table: [snapshots]")
    for key, value in table.items():
        where = _where(path, text, key, "snapshots")
        if key not in _SNAPSHOT_KEYS:
            raise _unknown(path, text, key, _SNAPSHOT_KEYS, "snapshots")
        if key == "enabled" and not isinstance(value, bool):
            raise ConfigError(f"{where}: enabled must be true or false, e.g. enabled = false")
        if key == "exclude_dirs" and not (isinstance(value, list) and all(
                isinstance(v, str) and v and "/" not in v and v not in (".", "..") for v in value)):
            raise ConfigError(f"{where}: exclude_dirs must be a list of directory names (no '/'), "
                              'e.g. exclude_dirs = [".venv", "node_modules"]')
        if key in _SNAPSHOT_LIMITS:
            low, high, unit = _SNAPSHOT_LIMITS[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(f"{where}: {key} must be a whole number from {low} to {high} ({unit})")
    return dict(table)


def _parse_diagnostics(path: Path, text: str, value: Any) -> dict[str, Any]:
    """``diagnostics = true|false`` or a list of commands (strings or tables)."""
    where = _where(path, text, "diagnostics")
    if isinstance(value, bool):
        return {"diagnostics": value}
    if not isinstance(value, list):
        raise ConfigError(f'{where}: diagnostics must be false, true or a list of commands, e.g. diagnostics = '
                          '["ruff check --quiet {file}"] (see docs/tools.md)')
    commands = []
    for n, entry in enumerate(value, 1):
        def bad(what: str, n: int = n) -> ConfigError:
            return ConfigError(f"{where}: diagnostics entry #{n} {what} (see docs/tools.md)")

        table = {"command": entry} if isinstance(entry, str) else entry
        if not isinstance(table, dict):
            raise bad('must be a command string or a table { command = "...", paths = ["*.py"], timeout = 30 }')
        if unknown := _unknown_entry_key(table, _DIAGNOSTIC_KEYS):
            raise bad(unknown)
        command, timeout, paths = table.get("command"), table.get("timeout"), _patterns(table.get("paths", []))
        if not isinstance(command, str) or not command.strip():
            raise bad('needs command = "..." (a shell line; {file} is the edited file)')
        if not _positive_or_none(timeout):
            raise bad(f"timeout must be a positive number of seconds, at most {MAX_TIMEOUT_S}")
        if paths is None:
            raise bad('paths must be a list of patterns, e.g. paths = ["*.py"]')
        commands.append(DiagnosticCommand(command, paths, float(timeout or DEFAULT_DIAGNOSTIC_TIMEOUT), where))
    return {"diagnostics": True, "diagnostic_commands": tuple(commands)}


def parse_duration(text: str) -> float:
    """Seconds of ``90``, ``90s``, ``5m``, ``1h30m``, ``2.5h``; ValueError saying the form."""
    spec = text.strip().lower()
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?", spec)
    if not spec or parts is None or not any(parts.groups()):
        raise ValueError(f"{text!r} is no duration: write seconds (90, 90s), minutes (5m) or hours (1h30m)")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in parts.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise ValueError(f"{text!r}: a time limit must be longer than 0 s")
    return total


def _check_budget(where: str, key: str, value: Any) -> None:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if key == "max_cost" and not (number and value >= 0):
        raise ConfigError(f"{where}: max_cost must be a number of US dollars >= 0, e.g. max_cost = 2.50")
    if key == "max_tokens" and not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        raise ConfigError(f"{where}: max_tokens must be a whole number > 0, e.g. max_tokens = 2_000_000")
    if key == "max_time":
        try:
            good = parse_duration(value) > 0 if isinstance(value, str) else number and 0 < value < float("inf")
        except ValueError:
            good = False
        if not good:
            raise ConfigError(f'{where}: max_time must be a duration such as "90s", "5m" or "1h30m", '
                              "or a number of seconds > 0")


def parse_config(text: str, path: Path) -> CodeloopConfig:
    """Check and convert one file's text; ConfigError on any problem."""
    try:
        data = tomllib.loads(text)
    except ValueError as exc:  # TOMLDecodeError, or a number of over 4300 digits
        raise ConfigError(f"{path}: invalid TOML: {exc}; fix the syntax (see docs/config.md)") from None
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in _TOP_KEYS:
            raise _unknown(path, text, key, _TOP_KEYS, None)
        where = _where(path, text, key)
        if key in _STRING_KEYS:
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where}: {key} must be a non-empty string, e.g. {key} = \"...\"")
            if key in _CHOICES and value not in _CHOICES[key]:
                shown = SANDBOX_MODES if key == "sandbox" else _CHOICES[key]
                raise ConfigError(f"{where}: {key} = {value!r} is not one of {', '.join(shown)}")
            if key == "model_file" and not Path(value).expanduser().is_absolute():
                # Relative to what? The file is read from several places; an absolute path is unambiguous.
                raise ConfigError(f"{where}: model_file must be an absolute path (or start with ~/), "
                                  f"e.g. model_file = \"~/models/{Path(value).name}\"")
        elif key in _COUNT_KEYS:
            limit, least = _COUNT_LIMITS[key], _COUNT_MINIMUM.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= limit:
                raise ConfigError(f"{where}: {key} must be a whole number from {least} to {limit} ({_COUNT_KEYS[key]})")
        elif key in _BUDGET_KEYS:
            _check_budget(where, key, value)
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: {key} must be true or false, e.g. {key} = false")
        elif key == "hooks":
            value = _parse_hooks(path, text, value)
        elif key == "diagnostics":
            values.update(_parse_diagnostics(path, text, value))
            continue
        elif key == "snapshots":
            value = _parse_snapshots(path, text, value)
        else:
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: mcp_servers must be tables: [mcp_servers.NAME]")
            if any("__" in name or not name for name in value):
                raise ConfigError(f"{where}: MCP server names must be non-empty and contain no '__' "
                                  "(it separates server and tool in tool names)")
            value = {name: _parse_server(path, text, name, table) for name, table in value.items()}
        values[key] = value
    return CodeloopConfig(**values, sources=(str(path),))


MAX_CONFIG_BYTES = 1024 * 1024
"""Largest config, approvals or command file codeloop reads (a bigger one is refused unread)."""


def read_project_file(path: Path, workspace: Path | None) -> bytes | None:
    """The bytes of a config file, or None when there is none. ``workspace``: the file belongs
    to that repository and is read only when it is a regular file inside it (a link leading
    out, a FIFO or a device is refused, :func:`codeloop.environments.safe_open.read_owned_file`);
    the user's own files (``None``) may be links. ConfigError with a one-line reason otherwise."""
    try:
        return read_owned_file(path, max_bytes=MAX_CONFIG_BYTES, within=workspace)
    except FileNotFoundError:
        return None
    except WorkspaceError as exc:
        raise ConfigError(f"{exc}; replace it with a regular file (or delete it)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}; fix its permissions") from None


def _read(path: Path, workspace: Path | None = None) -> tuple[CodeloopConfig, bytes] | None:
    raw = read_project_file(path, workspace)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save it as UTF-8") from None
    return parse_config(text, path), raw


def needs_trust(config: CodeloopConfig) -> dict[str, Any]:
    """The settings of a project file that apply only once the user trusts it: those that
    lower safety (``sandbox = "off"`` or its old name ``"full"``, ``approval = "never-ask"``), send the API key
    elsewhere (``base_url``) or start programs (``model_file``: llama-server on a file the
    repository names; ``mcp_servers``, ``hooks``, the commands of ``diagnostics``) or narrow
    what undo covers and keeps (``[snapshots]``: a repository must not switch off the undo of
    what its own instructions make the agent do, nor exclude the files it deletes)."""
    risky = {"sandbox": config.sandbox in ("off", "full"), "approval": config.approval == "never-ask",
             "base_url": config.base_url is not None, "model_file": config.model_file is not None,
             "mcp_servers": bool(config.mcp_servers),
             "hooks": bool(config.hooks), "diagnostics": bool(config.diagnostic_commands),
             "snapshots": bool(config.snapshots)}
    shown = {"mcp_servers": dict(config.mcp_servers), "diagnostics": config.diagnostic_commands}
    return {key: shown.get(key, getattr(config, key)) for key, applies in risky.items() if applies}


def merge(low: CodeloopConfig, high: CodeloopConfig) -> CodeloopConfig:
    """``high``'s set keys over ``low``'s; MCP servers merge by name."""
    changes: dict[str, Any] = {k: getattr(high, k) for k in (*_STRING_KEYS, *_COUNT_KEYS, *_BOOL_KEYS, *_BUDGET_KEYS,
                                                             "diagnostics") if getattr(high, k) is not None}
    return replace(low, **changes, mcp_servers={**low.mcp_servers, **high.mcp_servers},
                   snapshots={**low.snapshots, **high.snapshots},
                   hooks=low.hooks + high.hooks, diagnostic_commands=low.diagnostic_commands + high.diagnostic_commands,
                   sources=low.sources + high.sources, warnings=low.warnings + high.warnings)


_UNSET: dict[str, dict[str, Any]] = {"mcp_servers": {"mcp_servers": {}}, "hooks": {"hooks": ()},
                                     "diagnostics": {"diagnostics": None, "diagnostic_commands": ()},
                                     "snapshots": {"snapshots": {}}}
"""The fields an untrusted key of :func:`needs_trust` resets (the others become None)."""


def _seconds(value: Any) -> float:
    return parse_duration(value) if isinstance(value, str) else float(value)


def _tighter(user: Any, project: Any) -> Any:
    """The project's budget when the user has none or it is lower, else the user's."""
    if user is None or project is None:
        return project if user is None else user
    return project if _seconds(project) < _seconds(user) else user


def load_config(workspace: Path | str) -> CodeloopConfig:
    """The user config overlaid by the project config of ``workspace``; ConfigError if either is bad.

    The project file's :func:`needs_trust` settings are dropped, with a warning in
    ``warnings``, unless the user trusted that exact content (``codeloop trust``)."""
    config = CodeloopConfig()
    user = _read(user_config_path())
    if user is not None:
        config = merge(config, user[0])
    path = project_config_path(workspace)
    project = _read(path, Path(workspace))
    if project is not None:
        loaded, raw = project
        risky = needs_trust(loaded)
        if risky and not is_trusted(path, raw, Path(workspace)):
            dropped: dict[str, Any] = {}
            for key in risky:  # what the untrusted file's key becomes: not set
                dropped.update(_UNSET.get(key, {key: None}))
            loaded = replace(loaded, **dropped,
                             warnings=(untrusted_warning(path, ", ".join(risky), Path(workspace)),))
        if not is_trusted(path, raw):  # a repository may tighten the user's budgets, never loosen them
            loaded = replace(loaded, **{k: _tighter(getattr(config, k), getattr(loaded, k)) for k in _BUDGET_KEYS})
        config = merge(config, loaded)
    return config
