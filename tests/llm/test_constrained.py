"""Constrained replies (issue 10): the reply schema, and reply → call/answer conversion."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.llm.constrained import (
    Support,
    describe_reply_format,
    mode_statement,
    parse_constrained_reply,
    reply_schema,
)
from codeloop.llm.types import ToolDefinition

NAMES = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True)
PARAM_TYPES = st.sampled_from(["string", "integer", "boolean", "number"])
VALUES = {"string": "x", "integer": 3, "boolean": True, "number": 1.5}
WRONG = {"string": 7, "integer": "seven", "boolean": "yes", "number": "one"}


@st.composite
def tool_sets(draw: st.DrawFn) -> list[ToolDefinition]:
    names = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
    tools = []
    for name in names:
        params = draw(st.dictionaries(NAMES, PARAM_TYPES, max_size=4))
        required = [p for p in params if draw(st.booleans())]
        tools.append(ToolDefinition(name, f"{name} tool", {
            "type": "object", "properties": {p: {"type": t} for p, t in params.items()},
            "required": required, "additionalProperties": False,
        }))
    return tools


def _valid_args(tool: ToolDefinition) -> dict[str, Any]:
    return {p: VALUES[spec["type"]] for p, spec in tool.parameters["properties"].items()}


def _matching_branches(schema: dict[str, Any], instance: Any) -> int:
    return sum(jsonschema.Draft202012Validator(b).is_valid(instance) for b in schema["anyOf"])


@settings(max_examples=60, deadline=None)
@given(tool_sets())
def test_reply_schema_is_valid_and_each_call_or_answer_matches_exactly_one_branch(tools: list[ToolDefinition]) -> None:
    schema = reply_schema(tools)
    jsonschema.Draft202012Validator.check_schema(schema)
    for tool in tools:
        call = {"tool": tool.name, "arguments": _valid_args(tool)}
        jsonschema.validate(call, schema)
        assert _matching_branches(schema, call) == 1
    answer = {"final_answer": "done"}
    jsonschema.validate(answer, schema)
    assert _matching_branches(schema, answer) == 1


@settings(max_examples=60, deadline=None)
@given(tool_sets(), NAMES)
def test_reply_schema_rejects_unknown_tools_extra_keys_and_prose(tools: list[ToolDefinition], other: str) -> None:
    validator = jsonschema.Draft202012Validator(reply_schema(tools))
    if other not in {t.name for t in tools}:
        assert not validator.is_valid({"tool": other, "arguments": {}})
    first = tools[0]
    assert not validator.is_valid({"tool": first.name, "arguments": _valid_args(first), "note": "x"})
    assert not validator.is_valid({"final_answer": "done", "tool": first.name})
    assert not validator.is_valid("I will now edit the file.")
    for param, spec in first.parameters["properties"].items():
        bad = {**_valid_args(first), param: WRONG[spec["type"]]}
        assert not validator.is_valid({"tool": first.name, "arguments": bad})


SCHEMAS = {
    "read_file": {"type": "object", "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
                  "required": ["path"], "additionalProperties": False},
    "shell": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


def test_call_reply_becomes_a_call_with_its_arguments() -> None:
    reply = parse_constrained_reply('{"tool": "read_file", "arguments": {"path": "a.py", "offset": 3}}', SCHEMAS)
    assert reply.answer is None and reply.call is not None
    assert (reply.call.name, reply.call.arguments, reply.call.parse_error) == ("read_file", {"path": "a.py", "offset": 3}, None)
    assert json.loads(reply.call.raw_arguments or "") == {"path": "a.py", "offset": 3}


def test_final_answer_reply_becomes_the_answer() -> None:
    reply = parse_constrained_reply(' {"final_answer": "All tests pass."}\n', SCHEMAS)
    assert reply.call is None and reply.answer == "All tests pass."


def test_prose_reply_is_an_error_listing_every_valid_form() -> None:
    call = parse_constrained_reply("Sure! I will read the file.", SCHEMAS).call
    assert call is not None and call.parse_error is not None
    assert call.parse_error.startswith("Invalid reply: not JSON (Expecting value at character 0).")
    assert '{"tool": "read_file", "arguments": {"path": <string>, "offset": <integer, optional>}}' in call.parse_error
    assert '{"tool": "shell", "arguments": {"command": <string>}}' in call.parse_error
    assert '{"final_answer": "<your answer to the user>"}' in call.parse_error


def test_unknown_tool_names_the_available_tools() -> None:
    call = parse_constrained_reply('{"tool": "run", "arguments": {}}', SCHEMAS).call
    assert call is not None
    assert "unknown tool 'run'; available tools: read_file, shell" in (call.parse_error or "")


def test_bad_arguments_show_the_exact_form_for_that_tool() -> None:
    call = parse_constrained_reply('{"tool": "read_file", "arguments": {"path": "a", "offset": "ten"}}', SCHEMAS).call
    assert call is not None and call.name == "read_file"
    assert call.parse_error == (
        "Invalid reply: arguments for read_file: offset: 'ten' is not of type 'integer'. Reply with exactly this form:\n"
        '{"tool": "read_file", "arguments": {"path": <string>, "offset": <integer, optional>}}'
    )


def test_missing_required_argument_and_wrong_keys_are_errors() -> None:
    missing = parse_constrained_reply('{"tool": "shell", "arguments": {}}', SCHEMAS).call
    assert missing is not None and "'command' is a required property" in (missing.parse_error or "")
    keys = parse_constrained_reply('{"name": "shell", "arguments": {"command": "ls"}}', SCHEMAS).call
    assert keys is not None and '(got arguments, name)' in (keys.parse_error or "")
    number = parse_constrained_reply('{"final_answer": 3}', SCHEMAS).call
    assert number is not None and '"final_answer" must be a string' in (number.parse_error or "")
    array = parse_constrained_reply("[1, 2]", SCHEMAS).call
    assert array is not None and "a JSON list, not an object" in (array.parse_error or "")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["tool", "arguments", "final_answer", "path", "command", "x"]), inner, max_size=3),
    max_leaves=10).map(json.dumps)))
def test_any_reply_text_gives_a_call_or_an_answer_never_raises(text: str) -> None:
    reply = parse_constrained_reply(text, SCHEMAS)
    assert (reply.call is None) != (reply.answer is None)
    if reply.call is not None and reply.call.parse_error is None:
        jsonschema.validate(reply.call.arguments, SCHEMAS[reply.call.name])


def test_deeply_nested_reply_is_an_error_not_a_crash() -> None:
    call = parse_constrained_reply("[" * 100_000 + "]" * 100_000, SCHEMAS).call
    assert call is not None and call.parse_error is not None


def test_prompt_layer_teaches_both_forms() -> None:
    text = describe_reply_format([ToolDefinition("shell", "Run", SCHEMAS["shell"])])
    assert text.startswith("# Reply format\nEvery reply is exactly one JSON object")
    assert '{"tool": "shell", "arguments": {"command": <string>}}' in text and '{"final_answer"' in text


def test_mode_statement_says_which_mode_is_active_and_why() -> None:
    assert mode_statement("off", None).startswith("Constrained decoding: off")
    assert mode_statement("on", None).startswith("Constrained decoding: on (forced")
    yes = mode_statement("auto", Support(True, "the server constrains replies to a JSON Schema"))
    assert yes == "Constrained decoding: on (auto: the server constrains replies to a JSON Schema)."
    no = mode_statement("auto", Support(False, "the server rejected it"))
    assert no.startswith("Constrained decoding: off (auto: the server rejected it)")


@settings(max_examples=60, deadline=None)
@given(tool_sets())
def test_reply_schema_never_forces_an_optional_argument_to_be_written(tools: list[ToolDefinition]) -> None:
    # Issue 20: a small model made to write every field fills the optional ones with "" or 0.
    schema = reply_schema(tools)
    for tool, branch in zip(tools, schema["anyOf"], strict=False):
        arguments = branch["properties"]["arguments"]
        assert list(arguments.get("required", [])) == list(tool.parameters["required"])
        only_required = {p: VALUES[tool.parameters["properties"][p]["type"]] for p in tool.parameters["required"]}
        jsonschema.validate({"tool": tool.name, "arguments": only_required}, schema)
