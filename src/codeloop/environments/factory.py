"""``open_environment``: the one place a workspace's ``ExecutionEnvironment`` is chosen.

Every face (``codeloop run``, ``codeloop tool``, relay, spaces, codali) builds its
environment here from two choices: ``sandbox`` (``read-only`` or ``workspace-write``:
commands in bubblewrap; ``off``: no sandbox; ``full``, its old name, is accepted with a
warning) and ``network``. Left out, the network follows the sandbox
(:func:`default_network`); asked for, it holds in every mode: ``off`` with the network off
runs each command in bubblewrap with only a new network namespace (and no Unix sockets),
and where bubblewrap cannot run that is refused, never run with the network on.
:func:`settle_sandbox` is the validation (and the loud fallback) ``run`` and ``tool`` share.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codeloop.environments.base import EnvPolicy, ExecLimits, ExecutionEnvironment
from codeloop.environments.errors import SandboxUnavailableError
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.environments.sandbox import (
    DEPRECATED_MODES,
    FULL_DEPRECATED,
    INSTALL_BWRAP,
    SANDBOX_MODES,
    SandboxedExecutionEnvironment,
    SandboxMode,
    probe_bwrap,
    sandbox_refusal,
)

NETWORK_CHOICES = ("on", "off")


class SandboxOptionError(ValueError):
    """A ``--sandbox`` or ``--network`` value that is not one of the choices."""


@dataclass(frozen=True)
class SandboxChoice:
    """A checked sandbox mode and network setting that can be enforced on this machine."""

    mode: SandboxMode
    network: bool
    warning: str | None = None
    """Set when bubblewrap cannot run and the default sandbox was dropped, or when a
    deprecated mode name was given: say it loudly."""


def default_network(sandbox: SandboxMode) -> bool:
    """The network when none was asked for: only ``off`` (no sandbox) has it."""
    return sandbox == "off"


def sandbox_mode(sandbox: str) -> tuple[str, str | None]:
    """``sandbox`` with a deprecated name replaced, and the warning to print for it."""
    if sandbox in DEPRECATED_MODES:
        return DEPRECATED_MODES[sandbox], FULL_DEPRECATED
    return sandbox, None


def check_sandbox_options(sandbox: str, network: str | None) -> tuple[SandboxMode, bool]:
    """``--sandbox``/``--network`` values as (mode, network); raises SandboxOptionError.
    ``full`` is read as ``off`` (callers that face a user warn with :func:`sandbox_mode`)."""
    sandbox, _ = sandbox_mode(sandbox)
    if sandbox not in SANDBOX_MODES:
        raise SandboxOptionError(f"--sandbox {sandbox}: unknown mode. Use one of: {', '.join(SANDBOX_MODES)}.")
    if network is not None and network not in NETWORK_CHOICES:
        raise SandboxOptionError(f"--network {network}: unknown value. Use on or off.")
    return sandbox, default_network(sandbox) if network is None else network == "on"


def needs_bwrap(mode: SandboxMode, network: bool) -> bool:
    """True unless commands may run unconfined (``off`` with the network on)."""
    return not (mode == "off" and network)


def settle_sandbox(sandbox: str | None, network: str | None, *, default: SandboxMode) -> SandboxChoice:
    """The sandbox for ``--sandbox``/``--network`` (None: not given, ``default`` applies).

    When bubblewrap cannot run here: a sandbox the user did not choose falls back to
    ``off`` with a warning; a chosen sandbox, or ``--network off``, raises
    SandboxUnavailableError. Unknown values raise SandboxOptionError; ``full`` is ``off``
    with a warning that the name is deprecated."""
    deprecated = sandbox_mode(sandbox or default)[1] if sandbox is not None else None
    mode, net = check_sandbox_options(sandbox or default, network)
    if not needs_bwrap(mode, net):
        return SandboxChoice(mode, net, deprecated)
    why = probe_bwrap()
    if why is None:
        return SandboxChoice(mode, net, deprecated)
    if sandbox is None and mode != "off":
        # Only the default sandbox is dropped, and only when that cannot turn off a network
        # the user asked off: "off" without bubblewrap has the network.
        if network == "off":
            raise SandboxUnavailableError(sandbox_refusal("off", why))
        warning = (f"NO SANDBOX: {why}; commands run with your full permissions and the network. "
                   f"To sandbox them, {INSTALL_BWRAP}. Pass --sandbox off to silence this.")
        return SandboxChoice("off", True, warning)
    raise SandboxUnavailableError(sandbox_refusal(mode, why))


def open_environment(root: str | Path, *, sandbox: SandboxMode, network: bool | None = None,
                     shell: str | None = None, limits: ExecLimits | None = None,
                     env_policy: EnvPolicy = "inherit-all") -> ExecutionEnvironment:
    """The environment for ``root``: a ``LocalExecutionEnvironment`` for ``off`` with the
    network on, else a ``SandboxedExecutionEnvironment`` (whose ``initialize()`` raises
    SandboxUnavailableError, naming the fix, when bubblewrap cannot run here). ``network``
    None: :func:`default_network`."""
    mode, net = check_sandbox_options(sandbox, None if network is None else "on" if network else "off")
    extra = {} if shell is None else {"shell": shell}
    if not needs_bwrap(mode, net):
        return LocalExecutionEnvironment(root, limits=limits, env_policy=env_policy, **extra)
    return SandboxedExecutionEnvironment(root, mode=mode, network=net, limits=limits, env_policy=env_policy, **extra)
