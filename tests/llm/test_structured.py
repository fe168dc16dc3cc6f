"""generate_object()/stream_object() and the partial JSON parser (unified-llm spec §4.5–4.6)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response
from codeloop.llm.client import Client
from codeloop.llm.errors import NoObjectGeneratedError, ServerError
from codeloop.llm.retry import RetryPolicy
from codeloop.llm.structured import generate_object, parse_partial_json, stream_object

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def client_for(*script: Any, name: str = "openai") -> tuple[Client, ScriptedAdapter]:
    adapter = ScriptedAdapter(script, name=name)
    return Client({name: adapter}), adapter


async def test_4_5_native_schema_mode_and_parsed_output() -> None:
    client, adapter = client_for(text_response('{"name": "Alice", "age": 30}'))
    result = await generate_object("m", "Alice is 30", schema=PERSON, client=client)
    assert result.output == {"name": "Alice", "age": 30}
    fmt = adapter.requests[0].response_format
    assert fmt is not None and fmt.type == "json_schema" and fmt.json_schema == PERSON and fmt.strict


async def test_4_5_anthropic_gets_schema_in_system_prompt_and_fences_are_accepted() -> None:
    client, adapter = client_for(text_response('```json\n{"name": "Bob", "age": 4}\n```'), name="anthropic")
    result = await generate_object("m", "Bob is 4", schema=PERSON, client=client, system="You extract.")
    assert result.output == {"name": "Bob", "age": 4}
    req = adapter.requests[0]
    assert req.response_format is None
    assert req.messages[0].text.startswith("You extract.") and '"required": ["name", "age"]' in req.messages[0].text


@pytest.mark.parametrize(
    ("text", "match"),
    [("Alice is 30.", "not valid JSON"), ('{"name": "Alice"}', "'age' is a required property"),
     ('{"name": "A", "age": "x"}', "at age")],
)
async def test_4_5_invalid_output_raises_no_object_generated(text: str, match: str) -> None:
    client, _ = client_for(text_response(text))
    with pytest.raises(NoObjectGeneratedError, match=match) as info:
        await generate_object("m", "x", schema=PERSON, client=client)
    assert info.value.text == text


async def test_6_6_validation_failures_are_not_retried_but_transport_errors_are() -> None:
    client, adapter = client_for(ServerError("x", provider="openai"), text_response("nope"))
    with pytest.raises(NoObjectGeneratedError):
        await generate_object("m", "x", schema=PERSON, client=client,
                              retry_policy=RetryPolicy(base_delay=0, jitter=False))
    assert len(adapter.requests) == 2


async def test_4_6_stream_object_yields_growing_partials_then_object() -> None:
    client, _ = client_for(text_response('{"name": "Alice Smith", "age": 30}'))
    adapter = client.providers["openai"]
    assert isinstance(adapter, ScriptedAdapter)
    adapter.chunk_size = 4
    result = stream_object("m", "x", schema=PERSON, client=client)
    partials = [p async for p in result]
    assert partials[-1] == {"name": "Alice Smith", "age": 30}
    assert any(p.get("name", "").startswith("Ali") and "age" not in p for p in partials)
    assert result.object() == {"name": "Alice Smith", "age": 30}


def test_partial_json_examples() -> None:
    assert parse_partial_json("") is None
    assert parse_partial_json('{"a": "hel') == {"a": "hel"}
    assert parse_partial_json('{"a": 1, "b') == {"a": 1}
    assert parse_partial_json('{"a": [1, {"b": tr') == {"a": [1, {}]}
    assert parse_partial_json('```json\n{"x": [1') == {"x": [1]}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.data())
def test_partial_json_never_raises_and_full_text_roundtrips(value: Any, data: st.DataObject) -> None:
    text = json.dumps(value)
    assert parse_partial_json(text) == value
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    parse_partial_json(text[:cut])  # any prefix: a value or None, never an exception
