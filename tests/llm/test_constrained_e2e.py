"""Constrained decoding against the real llama.cpp server with the 0.5B model (issue 10, e2e).

Wire behaviour only: the server accepts the reply schema built from each profile's real
tool set and its replies parse and validate. Which tool the model picks is not asserted.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import jsonschema
import pytest

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.agent.session import Session
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm import constrained
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.client import Client
from codeloop.llm.types import Message, Request, ToolDefinition
from codeloop.profiles import PROFILE_IDS, create_profile
from codeloop.profiles.base import ProviderProfile
from codeloop.tools.files import read_file_tool
from codeloop.tools.registry import ToolRegistry

from .conftest import LocalLLM

pytestmark = pytest.mark.e2e

SMALL_TOOLS = [
    ToolDefinition("read_file", "Read a file", {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
        "additionalProperties": False}),
    ToolDefinition("shell", "Run a command", {
        "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"],
        "additionalProperties": False}),
]


@pytest.fixture
async def adapter(local_llm: LocalLLM) -> AsyncIterator[OpenAICompatibleAdapter]:
    a = OpenAICompatibleAdapter(local_llm.base_url, name="llama_cpp", timeout=local_llm.timeout)
    yield a
    await a.close()


async def test_llama_server_replies_validate_against_the_reply_schema(
    adapter: OpenAICompatibleAdapter, local_llm: LocalLLM,
) -> None:
    schema = constrained.reply_schema(SMALL_TOOLS)
    for prompt in ("Show me what is in README.md.", "Say hello to the user."):
        response = await adapter.complete(Request(
            model=local_llm.model, temperature=0.0, max_tokens=120,
            messages=[Message.system(constrained.describe_reply_format(SMALL_TOOLS)), Message.user(prompt)],
            response_format=constrained.response_format(SMALL_TOOLS),
        ))
        if response.finish_reason.reason == "length":
            # How long an answer the model chooses is not wire behaviour; the grammar is: even a
            # reply cut by max_tokens must open as one of the schema's two forms.
            assert re.match(r'\{\s*"(final_answer|tool)"\s*:', response.text), response.text
            continue
        assert response.finish_reason.reason == "stop", response.text
        jsonschema.validate(json.loads(response.text), schema)
        reply = constrained.parse_constrained_reply(response.text, {t.name: t.parameters for t in SMALL_TOOLS})
        assert reply.answer is not None or (reply.call is not None and reply.call.parse_error is None)


@pytest.mark.parametrize("profile_id", PROFILE_IDS)
async def test_llama_server_accepts_the_reply_schema_of_each_profile_tool_set(
    adapter: OpenAICompatibleAdapter, local_llm: LocalLLM, profile_id: str,
) -> None:
    tools = create_profile(profile_id).tools()
    response = await adapter.complete(Request(
        model=local_llm.model, temperature=0.0, max_tokens=6, messages=[Message.user("Say hi.")],
        response_format=constrained.response_format(tools),
    ))
    # 6 tokens cannot finish an object, but what came out must be the start of one
    assert response.text.lstrip().startswith("{"), response.text


async def test_probe_finds_llama_server_supports_json_schema(adapter: OpenAICompatibleAdapter, local_llm: LocalLLM) -> None:
    support = await constrained.probe_support(adapter.complete, local_llm.model)
    assert support.supported, support.reason


@pytest.mark.timeout(900)
async def test_session_auto_turns_constrained_mode_on_and_every_streamed_reply_parses(
    local_llm: LocalLLM, tmp_path: Path,
) -> None:
    constrained.clear_support_cache()
    (tmp_path / "README.md").write_text("# demo\nThe answer is 42.\n")
    profile = ProviderProfile(
        id="openai", model=local_llm.model, tool_registry=ToolRegistry.of([read_file_tool()]),
        base_instructions="You are a coding assistant working in a repository.", provider="llama_cpp",
        supports_reasoning=False, context_window_size=8_192,
        # Greedy: at the server's default temperature (0.8, a random seed) the 0.5B model once wrote
        # over 3,000 tokens into one reply, and the test ran into its 300 s timeout in CI.
        temperature=0.0,
    )
    client = Client({"llama_cpp": OpenAICompatibleAdapter(local_llm.base_url, name="llama_cpp",
                                                          timeout=local_llm.timeout)})
    session = Session(profile, LocalExecutionEnvironment(str(tmp_path)),
                      SessionConfig(constrained_decoding="auto", max_tool_rounds_per_input=1), client)
    events: list[ev.SessionEvent] = []
    session.subscribe(events.append)
    await session.submit("What does README.md say?")
    end_reason = session.end_reason
    await session.close()
    await client.close()
    modes = [e.message for e in events if isinstance(e, ev.WarningEvent) and e.code == "constrained_decoding"]
    assert modes == ["Constrained decoding: on (auto: the server constrains replies to a JSON Schema)."]
    assert end_reason in ("completed", "round_limit")
    errors = [e.error for e in events if isinstance(e, ev.ToolCallEnd) and e.error]
    assert not [e for e in errors if e.startswith("Invalid reply")], errors
    replies = [e for e in events if isinstance(e, ev.AssistantTextEnd)]
    # each reply is a call (its text kept as the structured call) or a non-empty answer
    assert replies and all(e.tool_call_count == 1 or e.text for e in replies)
