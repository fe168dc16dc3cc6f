"""The data model of unified-llm spec §3 and §5.3–5.4."""

from __future__ import annotations

import dataclasses

import pytest

from codeloop.llm.errors import ConfigurationError, InvalidToolCallError
from codeloop.llm.types import (
    ContentKind,
    ContentPart,
    FinishReason,
    ImageData,
    Message,
    Response,
    ResponseFormat,
    Role,
    ToolCallData,
    ToolChoice,
    ToolDefinition,
    Usage,
    parse_tool_arguments,
    tool_arguments_or_raw,
)


def test_3_2_five_roles() -> None:
    assert [r.value for r in Role] == ["system", "user", "assistant", "tool", "developer"]


def test_3_1_convenience_constructors_build_the_right_roles_and_parts() -> None:
    assert Message.system("s").role is Role.SYSTEM
    assert Message.user("u").content == [ContentPart(kind=ContentKind.TEXT, text="u")]
    assert Message.assistant("a").text == "a"
    tool = Message.tool_result(tool_call_id="call_1", content="72F", is_error=True)
    assert tool.role is Role.TOOL
    assert tool.tool_call_id == "call_1"
    result = tool.content[0].tool_result
    assert result is not None and result.is_error and result.content == "72F"


def test_3_1_text_concatenates_only_text_parts() -> None:
    msg = Message(
        Role.ASSISTANT,
        [
            ContentPart.of_text("a"),
            ContentPart.of_thinking("hidden", signature="sig"),
            ContentPart.of_tool_call(ToolCallData("c1", "f", {})),
            ContentPart.of_text("b"),
        ],
    )
    assert msg.text == "ab"
    assert Message(Role.ASSISTANT, []).text == ""


def test_3_3_kind_accepts_provider_strings() -> None:
    part = ContentPart(kind="x-provider-citation")
    assert part.kind == "x-provider-citation"


def test_3_5_image_needs_exactly_one_source() -> None:
    with pytest.raises(ConfigurationError):
        ImageData()
    with pytest.raises(ConfigurationError):
        ImageData(url="https://x/a.png", data=b"x")


def test_3_5_redacted_thinking_keeps_opaque_data() -> None:
    part = ContentPart.of_redacted_thinking("EmwKAhgBEgy3va3pzix")
    assert part.kind == ContentKind.REDACTED_THINKING
    assert part.thinking is not None and part.thinking.redacted and part.thinking.text == "EmwKAhgBEgy3va3pzix"


def test_3_7_response_accessors() -> None:
    msg = Message(
        Role.ASSISTANT,
        [
            ContentPart.of_thinking("think ", "sig1"),
            ContentPart.of_thinking("more", "sig2"),
            ContentPart.of_text("hello"),
            ContentPart.of_tool_call(ToolCallData("c1", "get_weather", '{"city": "Paris"}')),
            ContentPart.of_tool_call(ToolCallData("c2", "noop", {"a": 1})),
        ],
    )
    resp = Response("r", "m", "p", msg, FinishReason("tool_calls", "tool_use"))
    assert resp.text == "hello"
    assert resp.reasoning == "think more"
    calls = resp.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("c1", "get_weather", {"city": "Paris"}),
        ("c2", "noop", {"a": 1}),
    ]
    assert calls[0].raw_arguments == '{"city": "Paris"}'
    assert Response("r", "m", "p", Message.assistant("x"), FinishReason("stop")).reasoning is None


def test_5_4_invalid_json_arguments_become_parse_error_not_exception() -> None:
    msg = Message(Role.ASSISTANT, [ContentPart.of_tool_call(ToolCallData("c1", "f", '{"a": '))])
    (call,) = Response("r", "m", "p", msg, FinishReason("tool_calls")).tool_calls
    assert call.arguments == {}
    assert call.raw_arguments == '{"a": '
    assert call.parse_error is not None and "not valid JSON" in call.parse_error


def test_5_4_parse_tool_arguments_errors_are_specific() -> None:
    assert parse_tool_arguments("") == {}
    with pytest.raises(InvalidToolCallError, match="not valid JSON"):
        parse_tool_arguments("{oops")
    with pytest.raises(InvalidToolCallError, match="must be a JSON object, got list"):
        parse_tool_arguments("[1, 2]")


def test_3_9_usage_addition_sums_and_keeps_none_when_both_none() -> None:
    a = Usage(10, 5, 15, reasoning_tokens=None, cache_read_tokens=3)
    b = Usage(1, 2, 3, reasoning_tokens=4, cache_read_tokens=None)
    total = a + b
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (11, 7, 18)
    assert total.reasoning_tokens == 4
    assert total.cache_read_tokens == 3
    assert total.cache_write_tokens is None


def test_5_1_tool_names_are_validated_at_definition() -> None:
    ToolDefinition("read_file", "Read a file", {"type": "object", "properties": {}})
    for bad in ["1abc", "has-dash", "", "a" * 65]:
        with pytest.raises(ConfigurationError, match="invalid"):
            ToolDefinition(bad, "d")
    with pytest.raises(ConfigurationError, match="type"):
        ToolDefinition("ok", "d", {"type": "array"})


def test_5_3_tool_choice_modes() -> None:
    assert ToolChoice.named("f") == ToolChoice("named", "f")
    with pytest.raises(ConfigurationError):
        ToolChoice("named")
    with pytest.raises(ConfigurationError):
        ToolChoice("sometimes")


def test_3_10_json_schema_format_needs_schema() -> None:
    with pytest.raises(ConfigurationError):
        ResponseFormat(type="json_schema")
    assert ResponseFormat(type="json_schema", json_schema={"type": "object"}, strict=True).strict


def test_records_are_frozen() -> None:
    msg = Message.user("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.role = Role.SYSTEM  # type: ignore[misc]


def test_arguments_nested_deeper_than_the_decoder_can_go_are_an_invalid_call_not_a_crash() -> None:
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(InvalidToolCallError, match="nested too deeply"):
        parse_tool_arguments(deep)
    assert tool_arguments_or_raw(deep) == deep  # kept as written, for the model to see
