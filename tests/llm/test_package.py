"""The public surface of codeloop.llm (STYLE §5) and Client.from_env routing (spec §2.2)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

import codeloop.llm as llm
from codeloop.llm.client import Client
from codeloop.llm.errors import SDKError
from codeloop.llm.types import Message, Request

from .adapters.wire_loopback import LoopbackServer, json_reply


def test_all_names_resolve_and_are_sorted_uniquely() -> None:
    assert len(set(llm.__all__)) == len(llm.__all__)
    for name in llm.__all__:
        assert getattr(llm, name) is not None, name


def test_import_has_no_observable_side_effects() -> None:
    code = "import os, codeloop.llm, sys; print(sorted(k for k in sys.modules if k.startswith('codeloop.llm.adapters.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "openai'" not in out.stdout and "anthropic" not in out.stdout and out.stderr == ""


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer().start()
    yield srv
    srv.stop()


@pytest.mark.parametrize(
    ("env_key", "env_base", "provider", "key_header"),
    [
        ("OPENAI_API_KEY", "OPENAI_BASE_URL", "openai", ("authorization", "Bearer k-openai")),
        ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "anthropic", ("x-api-key", "k-anthropic")),
        ("GEMINI_API_KEY", "GEMINI_BASE_URL", "gemini", None),
        ("GOOGLE_API_KEY", "GEMINI_BASE_URL", "gemini", None),
    ],
)
async def test_2_2_from_env_reads_key_and_base_url(
    server: LoopbackServer, env_key: str, env_base: str, provider: str, key_header: tuple[str, str] | None
) -> None:
    server.reset()
    server.push(json_reply({"error": {"message": "bad key", "type": "authentication_error"}}, status=401))
    key = "k-" + provider
    client = Client.from_env(env={env_key: key, env_base: server.base_url + "/v1"})
    assert list(client.providers) == [provider] and client.default_provider == provider
    with pytest.raises(SDKError):
        await client.complete(Request(model="m", messages=[Message.user("hi")]))
    await client.close()
    rec = server.last
    assert rec.path.startswith("/v1")
    if key_header is not None:
        assert rec.headers[key_header[0]] == key_header[1]
    else:
        assert key in (rec.headers.get("x-goog-api-key"), rec.query.get("key"))


def test_2_2_from_env_registers_in_order_first_is_default() -> None:
    env = {"GEMINI_API_KEY": "g", "ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}
    client = Client.from_env(env=env)
    assert list(client.providers) == ["openai", "anthropic", "gemini"] and client.default_provider == "openai"
