"""Choose the execution environment of a space and say how its network policy is enforced.

Commands run in the ``workspace-write`` sandbox (``codeloop.environments.factory``) whenever
bubblewrap works here: the tenant sees its own workspace and the system's toolchain, never
other workspaces or the server's data, and has no network unless its policy turns it on.
Without the sandbox (``--no-sandbox``, or bubblewrap missing) commands run in
``LocalExecutionEnvironment`` with the server's permissions: the returned policy is then
marked ``unsandboxed``, so every command that is not read-only asks for approval, and
network-off is enforced only by the command policy (network tools such as ``curl`` are
refused; a program that opens sockets itself is not stopped). :func:`open_environment`
reports which applies so the API and the docs can say it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from codeloop.environments.base import ExecLimits, ExecutionEnvironment
from codeloop.policy import Policy

log = logging.getLogger(__name__)

NetworkEnforcement = Literal["sandbox", "policy-only", "allowed"]

UNSANDBOXED_WARNING = ("NO SANDBOX: commands of every space run with this server's permissions and can read "
                       "other spaces' workspaces; every command that is not read-only waits for approval")
"""What the server and ``spaces exec`` say when commands run without bubblewrap."""


@dataclass(frozen=True)
class SpaceEnvironment:
    """An environment ready for a space's operations."""

    env: ExecutionEnvironment
    """Where files are read and commands run."""
    network_enforcement: NetworkEnforcement
    """``sandbox``: commands have no network; ``policy-only``: network tools are refused by
    the command policy but the process could still open sockets; ``allowed``: network on."""
    policy: Policy
    """The policy to judge operations by: the space's, ``unsandboxed`` without the sandbox."""


async def open_environment(root: Path | str, policy: Policy, *, sandbox: bool = True) -> SpaceEnvironment:
    """An initialized environment for ``root`` under ``policy`` (sandboxed when possible)."""
    from codeloop.environments.errors import SandboxUnavailableError
    from codeloop.tools.call_path import open_environment as open_env

    Path(root).mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - one cheap mkdir before any I/O
    limits = ExecLimits(default_timeout_ms=policy.shell.default_timeout_ms,
                        max_timeout_ms=policy.shell.max_timeout_ms)
    network = policy.network.enabled
    if sandbox:
        env = open_env(root, sandbox="workspace-write", network=network, limits=limits,
                                       env_policy="core-only")
        try:
            await env.initialize()
            return SpaceEnvironment(env, "allowed" if network else "sandbox", policy)
        except SandboxUnavailableError as exc:
            log.warning("bubblewrap sandbox unavailable (%s); network-off is enforced by command policy only. %s",
                        exc, UNSANDBOXED_WARNING)
    env = open_env(root, sandbox="off", network=True, limits=limits, env_policy="core-only")
    await env.initialize()
    return SpaceEnvironment(env, "allowed" if network else "policy-only", replace(policy, unsandboxed=True))
