"""The policy of a space as JSON: a preset plus overrides (wire edge of :mod:`codeloop.policy`).

::

    {"preset": "standard",
     "filesystem": {"enabled", "readOnly", "maxFileSize", "allowedPaths", "blockedPaths",
                    "approvalRequiredPaths"},
     "shell": {"enabled", "allowedCommands", "blockedCommands", "blockedPatterns",
               "approvalRequiredCommands", "approvalRequiredPatterns", "timeout", "maxTimeout"},
     "network": {"enabled", "allowedDomains"},
     "limits": {"maxRunTime", "maxOperations"},
     "undo": {"enabled"}}

Every key is optional; lists *replace* the preset's list. ``timeout`` is the default command
timeout in ms and ``maxTimeout`` the cap applied to every command. ``limits`` bound each run
(:mod:`codeloop.spaces.limits`) and ``undo.enabled: false`` turns the snapshots of each run's
changing operations off (a run's rewind then refuses); neither is part of the built :class:`Policy`.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codeloop.policy import Policy, preset
from codeloop.spaces.limits import RunLimits


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class FilesystemOverrides(_Strict):
    enabled: bool | None = None
    readOnly: bool | None = None
    maxFileSize: int | None = Field(default=None, ge=0)
    allowedPaths: list[str] | None = None
    blockedPaths: list[str] | None = None
    approvalRequiredPaths: list[str] | None = None


class ShellOverrides(_Strict):
    enabled: bool | None = None
    allowedCommands: list[str] | None = None
    blockedCommands: list[str] | None = None
    blockedPatterns: list[str] | None = None
    approvalRequiredCommands: list[str] | None = None
    approvalRequiredPatterns: list[str] | None = None
    timeout: int | None = Field(default=None, ge=1000, le=3_600_000)
    maxTimeout: int | None = Field(default=None, ge=1000, le=3_600_000)


class NetworkOverrides(_Strict):
    enabled: bool | None = None
    allowedDomains: list[str] | None = None


class RunLimitsConfig(_Strict):
    maxRunTime: int | None = Field(default=None, ge=1, le=7 * 24 * 3_600_000)
    """Wall time of a run's operations, in ms."""
    maxOperations: int | None = Field(default=None, ge=0, le=1_000_000)
    """Operations a run may process."""


class UndoConfig(_Strict):
    enabled: bool | None = None
    """False: no snapshots before and after a run's changing operations (faster; a rewind of
    the run refuses, naming them)."""


class PolicyConfig(_Strict):
    preset: Literal["restrictive", "standard", "permissive"] = "standard"
    filesystem: FilesystemOverrides = FilesystemOverrides()
    shell: ShellOverrides = ShellOverrides()
    network: NetworkOverrides = NetworkOverrides()
    limits: RunLimitsConfig = RunLimitsConfig()
    undo: UndoConfig = UndoConfig()


class PolicyConfigError(ValueError):
    """Raised for a policy configuration that does not validate; the message names the field."""


def _tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


def _set(obj: Any, **changes: Any) -> Any:
    return replace(obj, **{k: v for k, v in changes.items() if v is not None})


_PARSED: dict[str, PolicyConfig] = {}
"""Configurations already validated, by their canonical JSON: a space's policy is read for
every run (its limits, its undo setting, the policy itself), and validating it again cost
about a third of a millisecond each time."""

_PARSED_MAX = 256


def parse_policy_config(raw: object) -> PolicyConfig:
    """Validate a policy configuration; raise :class:`PolicyConfigError` with field paths.
    The answer may be shared with other callers: read it, do not change it."""
    try:
        key = json.dumps(raw, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not JSON (a caller's object): validated without the cache
        return _parse_policy_config(raw)
    found = _PARSED.get(key)
    if found is None:
        found = _parse_policy_config(raw)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = found
    return found


def _parse_policy_config(raw: object) -> PolicyConfig:
    try:
        config = PolicyConfig.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        problems = [f"policy.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()]
        raise PolicyConfigError("; ".join(problems)) from None
    for i, pat in enumerate((config.shell.blockedPatterns or []) + (config.shell.approvalRequiredPatterns or [])):
        try:
            re.compile(pat)
        except re.error as exc:
            raise PolicyConfigError(f"policy.shell patterns[{i}]: {pat!r} is not a valid regex ({exc})") from None
    return config


def build_policy(raw: object) -> Policy:
    """The :class:`~codeloop.policy.Policy` a configuration describes."""
    config = parse_policy_config(raw)
    base = preset(config.preset)
    fs, sh, net = config.filesystem, config.shell, config.network
    filesystem = _set(base.filesystem, enabled=fs.enabled, read_only=fs.readOnly, max_file_size=fs.maxFileSize,
                      allowed_paths=_tuple(fs.allowedPaths), blocked_paths=_tuple(fs.blockedPaths),
                      approval_paths=_tuple(fs.approvalRequiredPaths))
    shell = _set(base.shell, enabled=sh.enabled, blocked_commands=_tuple(sh.blockedCommands),
                 blocked_patterns=_tuple(sh.blockedPatterns), approval_commands=_tuple(sh.approvalRequiredCommands),
                 approval_patterns=_tuple(sh.approvalRequiredPatterns), default_timeout_ms=sh.timeout,
                 max_timeout_ms=sh.maxTimeout)
    if sh.allowedCommands is not None:
        shell = replace(shell, allowed_commands=tuple(sh.allowedCommands))
    if shell.default_timeout_ms > shell.max_timeout_ms:
        shell = replace(shell, default_timeout_ms=shell.max_timeout_ms)
    network = _set(base.network, enabled=net.enabled, allowed_domains=_tuple(net.allowedDomains))
    customized = config.model_dump(exclude_defaults=True, exclude={"preset", "limits"})
    return Policy(name=config.preset if not customized else f"{config.preset}+custom",
                  filesystem=filesystem, shell=shell, network=network)


def undo_enabled(raw: object) -> bool:
    """Whether the runs of a space with this configuration are snapshotted (the default)."""
    return parse_policy_config(raw).undo.enabled is not False


def run_limits(raw: object) -> RunLimits:
    """The run limits a configuration sets (none when it has no ``limits``)."""
    limits = parse_policy_config(raw).limits
    return RunLimits(max_run_time_ms=limits.maxRunTime, max_operations=limits.maxOperations)
