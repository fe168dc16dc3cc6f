"""SandboxedExecutionEnvironment passes the shared conformance suite (issue 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.environments import ExecLimits, ExecutionEnvironment
from codeloop.environments.sandbox import SandboxedExecutionEnvironment

pytest.register_assert_rewrite(f"{__package__}.conformance")
from .conformance import *  # noqa: E402, F403  (the shared suite)


@pytest.fixture(params=["workspace-write", "read-only"])
def sandbox_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def env_factory(sandbox_mode: str):  # type: ignore[no-untyped-def]
    def make(root: Path, limits: ExecLimits) -> ExecutionEnvironment:
        return SandboxedExecutionEnvironment(root, mode=sandbox_mode, limits=limits)  # type: ignore[arg-type]

    return make


@pytest.fixture
def env_writable(sandbox_mode: str) -> bool:
    return sandbox_mode == "workspace-write"


_shared_grandchild_test = test_5_4_background_grandchild_is_killed_with_the_group  # noqa: F405


async def test_5_4_background_grandchild_is_killed_with_the_group(  # type: ignore[no-redef]
    env: ExecutionEnvironment, workspace: Path, sandbox_mode: str
) -> None:
    """The shared test watches a tick file in the workspace, which read-only mode cannot
    write; there the grandchild is found by a unique marker in the host's /proc instead."""
    if sandbox_mode != "read-only":
        await _shared_grandchild_test(env, workspace)
        return
    import asyncio
    import uuid

    marker = f"codeloop-gc-{uuid.uuid4().hex}"
    result = await env.exec_command(f"(exec -a {marker} sleep 300) & sleep 30", timeout_ms=300)
    assert result.timed_out
    for _ in range(40):
        alive = [
            p for p in Path("/proc").iterdir()
            if p.name.isdigit() and marker.encode() in _cmdline(p)
        ]
        if not alive:
            break
        await asyncio.sleep(0.05)
    assert not alive


def _cmdline(proc_dir: Path) -> bytes:
    try:
        return (proc_dir / "cmdline").read_bytes()
    except OSError:
        return b""
