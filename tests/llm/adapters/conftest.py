"""Loopback wire server fixtures shared by the adapter tests (see ``wire_loopback``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .wire_loopback import LoopbackServer


@pytest.fixture(scope="module")
def loopback() -> Iterator[LoopbackServer]:
    """One real HTTP server on 127.0.0.1 per test module."""
    server = LoopbackServer().start()
    yield server
    server.stop()


@pytest.fixture
def wire(loopback: LoopbackServer) -> LoopbackServer:
    """The module's loopback server with no queued replies and no recorded requests."""
    loopback.reset()
    return loopback
