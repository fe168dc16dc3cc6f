"""Choose the execution environment of a space and say how its network policy is enforced.

When the policy turns the network off and the bubblewrap sandbox works here, commands run
in the ``workspace-write`` sandbox with the network off (``codeloop.environments.factory``): no
network namespace access at all. Otherwise commands run in ``LocalExecutionEnvironment`` and network-off is enforced only
by the command policy (network tools such as ``curl``/``wget``/``ssh`` are refused), which a
program that opens sockets itself can get around. :func:`open_environment` reports which one
applies so the API and the docs can say it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from codeloop.environments.base import ExecLimits, ExecutionEnvironment
from codeloop.policy import Policy

log = logging.getLogger(__name__)

NetworkEnforcement = Literal["sandbox", "policy-only", "allowed"]


@dataclass(frozen=True)
class SpaceEnvironment:
    """An environment ready for a space's operations."""

    env: ExecutionEnvironment
    """Where files are read and commands run."""
    network_enforcement: NetworkEnforcement
    """``sandbox``: commands have no network; ``policy-only``: network tools are refused by
    the command policy but the process could still open sockets; ``allowed``: network on."""


def _limits(policy: Policy) -> ExecLimits:
    return ExecLimits(default_timeout_ms=policy.shell.default_timeout_ms, max_timeout_ms=policy.shell.max_timeout_ms)


async def open_environment(root: Path | str, policy: Policy, *, sandbox: bool = True) -> SpaceEnvironment:
    """An initialized environment for ``root`` under ``policy`` (sandboxed when possible)."""
    from codeloop.environments import factory
    from codeloop.environments.errors import SandboxUnavailableError

    Path(root).mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - one cheap mkdir before any I/O
    limits = _limits(policy)
    if sandbox and not policy.network.enabled:
        env = factory.open_environment(root, sandbox="workspace-write", network=False, limits=limits,
                                       env_policy="core-only")
        try:
            await env.initialize()
            return SpaceEnvironment(env, "sandbox")
        except SandboxUnavailableError as exc:
            log.warning("bubblewrap sandbox unavailable (%s); network-off is enforced by command policy only", exc)
    # The policy, not the environment, keeps the network off here (see the module docstring).
    env = factory.open_environment(root, sandbox="full", network=True, limits=limits, env_policy="core-only")
    await env.initialize()
    return SpaceEnvironment(env, "allowed" if policy.network.enabled else "policy-only")
