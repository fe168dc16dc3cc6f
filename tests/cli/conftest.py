"""Fixtures of the ``codeloop`` command tests: the scripted model server and a workspace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer


@pytest.fixture
def server() -> Iterator[ChatServer]:
    """The loopback OpenAI-compatible server serving scripted replies (chat_server.py)."""
    with ChatServer() as s:
        yield s


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace directory ``tmp_path/ws`` (beside it: state and user config)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws
