"""Tool calls written as text (issue 10, text profile)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent.text_tool_calls import parse_text_tool_calls, tagged_example

SCHEMAS = {
    "write_file": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
    "shell": {
        "type": "object",
        "properties": {"command": {"type": "string"}, "timeout_ms": {"type": "integer"}},
        "required": ["command"],
    },
}


def test_tagged_syntax_keeps_code_verbatim_without_escaping() -> None:
    text = (
        'I will create it.\n<tool name="write_file">\n<path>hello.py</path>\n<content>\n'
        'print("Hello \\n World")\n</content>\n</tool>'
    )
    (call,) = parse_text_tool_calls(text, SCHEMAS)
    assert call.name == "write_file" and call.parse_error is None
    assert call.arguments == {"path": "hello.py", "content": 'print("Hello \\n World")\n'}


def test_tagged_integer_parameter_is_converted_by_schema() -> None:
    text = '<tool name="shell"><command>sleep 1</command><timeout_ms>500</timeout_ms></tool>'
    (call,) = parse_text_tool_calls(text, SCHEMAS)
    assert call.arguments == {"command": "sleep 1", "timeout_ms": 500}


def test_tagged_bad_integer_becomes_error_with_exact_valid_form() -> None:
    text = '<tool name="shell"><command>ls</command><timeout_ms>soon</timeout_ms></tool>'
    (call,) = parse_text_tool_calls(text, SCHEMAS)
    assert call.parse_error is not None
    assert "timeout_ms" in call.parse_error
    assert tagged_example("shell", SCHEMAS["shell"]) in call.parse_error


def test_unclosed_tagged_call_at_end_of_reply_is_accepted() -> None:
    (call,) = parse_text_tool_calls('<tool name="shell">\n<command>ls -la</command>\n', SCHEMAS)
    assert call.arguments == {"command": "ls -la"}


def test_a_call_closed_by_tool_result_ends_there_and_the_next_call_is_its_own() -> None:
    # Seen with the 1.5B model: both calls "closed" with </tool_result>; read as one shell
    # call holding the write's arguments, the write was lost.
    text = ('<tool name="shell">\n<command>cat a.txt</command>\n</tool_result>\n'
            '<tool name="write_file">\n<path>a.txt</path>\n<content>\nx\n</content>\n</tool_result>')
    calls = parse_text_tool_calls(text, SCHEMAS)
    assert [(c.name, c.arguments) for c in calls] == [("shell", {"command": "cat a.txt"}),
                                                      ("write_file", {"path": "a.txt", "content": "x\n"})]
    inner = '<tool name="write_file"><path>doc.md</path><content>write <tool name="shell"> calls</content></tool>'
    assert parse_text_tool_calls(inner, SCHEMAS)[0].arguments["content"] == 'write <tool name="shell"> calls'


def test_a_small_models_unclosed_parameters_are_read_up_to_the_next_one() -> None:
    # Seen with the 1.5B model (HumanEval/49): no closing tags, the same call three times.
    text = ('<tool name="shell">\n<command>python3 -c "print(1)"\n<timeout_ms>500\n</tool>')
    (call,) = parse_text_tool_calls(text, SCHEMAS, lenient=True)
    assert call.parse_error is None and call.arguments == {"command": 'python3 -c "print(1)"', "timeout_ms": 500}
    (strict,) = parse_text_tool_calls(text, SCHEMAS)  # cloud profiles: the error with the valid form
    assert strict.parse_error is not None and "missing required parameter <command>" in strict.parse_error
    mixed = '<tool name="write_file"><path>a.py</path>\n<content>\nx = "<b>"\n</tool>'
    (call,) = parse_text_tool_calls(mixed, SCHEMAS, lenient=True)
    assert call.arguments == {"path": "a.py", "content": 'x = "<b>"'}


@given(st.text(max_size=200), st.text(max_size=200))
def test_lenient_reading_never_raises_and_keeps_closed_values(a: str, b: str) -> None:
    text = f'<tool name="write_file"><path>{a}</path><content>{b}'
    calls = parse_text_tool_calls(text, SCHEMAS, lenient=True)
    assert len(calls) <= 1


def test_qwen_fenced_json_call_is_recovered() -> None:
    text = 'Sure:\n```json\n{"name": "shell", "arguments": {"command": "python hello.py"}}\n```\n'
    (call,) = parse_text_tool_calls(text, SCHEMAS)
    assert (call.name, call.arguments) == ("shell", {"command": "python hello.py"})


def test_hermes_tool_call_tags_and_string_arguments() -> None:
    text = '<tool_call>\n{"name": "shell", "arguments": "{\\"command\\": \\"ls\\"}"}\n</tool_call>'
    (call,) = parse_text_tool_calls(text, SCHEMAS)
    assert call.arguments == {"command": "ls"}


def test_bare_json_and_parameters_alias() -> None:
    (call,) = parse_text_tool_calls('{"name": "shell", "parameters": {"command": "pwd"}}', SCHEMAS)
    assert call.arguments == {"command": "pwd"}


def test_unknown_tool_becomes_error_listing_available_tools() -> None:
    (call,) = parse_text_tool_calls('{"name": "frobnicate", "arguments": {"x": "y"}}', SCHEMAS)
    assert call.parse_error == "Unknown tool: frobnicate. Available tools: shell, write_file."


def test_an_invented_tool_gets_the_equivalent_call_with_its_own_arguments() -> None:
    (call,) = parse_text_tool_calls('{"name": "run", "arguments": {"cmd": "ls -la"}}', SCHEMAS)
    assert call.parse_error == ("Unknown tool: run. Available tools: shell, write_file. To do that, call shell:\n"
                                '<tool name="shell">\n<command>ls -la</command>\n</tool>')
    (deleted,) = parse_text_tool_calls('<tool name="delete_file"><file_path>old data.txt</file_path></tool>',
                                       SCHEMAS)
    assert (deleted.parse_error or "").endswith("<command>rm -- 'old data.txt'</command>\n</tool>")


def test_broken_json_in_tool_call_tags_is_an_error_not_a_crash() -> None:
    (call,) = parse_text_tool_calls('<tool_call>{"name": "shell", "arguments": {"command": }</tool_call>',
                                    SCHEMAS)
    assert call.parse_error is not None and "does not parse" in call.parse_error


def test_json_without_arguments_key_is_prose_not_a_call() -> None:
    assert parse_text_tool_calls('The package is {"name": "app", "version": "1"}', SCHEMAS) == ()


def test_several_calls_keep_their_order_of_appearance() -> None:
    text = ('{"name": "shell", "arguments": {"command": "a"}}\n'
            '<tool name="shell"><command>b</command></tool>\n'
            '<tool_call>{"name": "shell", "arguments": {"command": "c"}}</tool_call>')
    calls = parse_text_tool_calls(text, SCHEMAS)
    assert [c.arguments["command"] for c in calls] == ["a", "b", "c"]
    assert len({c.id for c in calls}) == 3


@given(st.text(max_size=300))
def test_parser_never_raises_on_arbitrary_text(text: str) -> None:
    for call in parse_text_tool_calls(text, SCHEMAS):
        assert call.parse_error is not None or call.name in SCHEMAS


@given(st.text(alphabet=st.characters(blacklist_characters="<>\n\r"), max_size=80).map(str.strip),
       st.text(max_size=200))
def test_tagged_round_trip_keeps_content_verbatim(path: str, content: str) -> None:
    if "</content>" in content or "</tool>" in content:
        return
    text = f'<tool name="write_file">\n<path>{path}</path>\n<content>\n{content}</content>\n</tool>'
    calls = parse_text_tool_calls(text, SCHEMAS)
    assert calls[0].arguments == {"path": path, "content": content}
    json.dumps(calls[0].arguments)


def test_missing_required_parameter_names_it_and_shows_form() -> None:
    (call,) = parse_text_tool_calls('<tool name="write_file"><path>a.py</path></tool>', SCHEMAS)
    assert call.parse_error is not None and "missing required parameter <content>" in call.parse_error
    assert '<content>string (required)</content>' in call.parse_error


def test_json_nested_deeper_than_python_decodes_is_never_raised() -> None:
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    assert parse_text_tool_calls(f"Thinking: {deep}", SCHEMAS) == ()
    (call,) = parse_text_tool_calls(f'<tool_call>{{"name": "shell", "arguments": {deep}}}</tool_call>', SCHEMAS)
    assert call.parse_error is not None and "the JSON inside <tool_call> does not parse" in call.parse_error
    (call,) = parse_text_tool_calls('{"name": "shell", "arguments": "{\\"command\\": ' + "9" * 5000 + '}"}', SCHEMAS)
    assert call.parse_error is not None and "arguments are not valid JSON (Exceeds the limit" in call.parse_error
