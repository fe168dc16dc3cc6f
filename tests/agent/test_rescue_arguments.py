"""Small-model rescue (issue 20): optional arguments a small model fills with empty values
are absent, not refused; an offset past the end shows the file's end. Local profiles only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.agent.reply_reader import ReplyReader
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.adapters.scripted import text_response, tool_call_response
from codeloop.tools.arguments import drop_empty_optionals, validate_arguments
from codeloop.tools.files import read_file_tool
from codeloop.tools.registry import ToolContext
from codeloop.tools.search import grep_tool
from codeloop.tools.sets import all_tools

from .agent_harness import tagged

GREP = grep_tool().definition.parameters
READ = read_file_tool().definition.parameters
SCHEMAS = {"grep": GREP, "read_file": READ}


def test_empty_optional_values_are_absent_and_out_of_range_numbers_are_met() -> None:
    given = {"pattern": "def", "path": "", "glob_filter": " ", "output_mode": "", "case_insensitive": None,
             "max_results": 0}
    assert drop_empty_optionals(GREP, given) == {"pattern": "def"}
    assert drop_empty_optionals(READ, {"file_path": "a.py", "offset": 0, "limit": -1}) == {"file_path": "a.py"}
    assert drop_empty_optionals(READ, {"file_path": "a.py", "offset": 7, "limit": 30}) == {
        "file_path": "a.py", "offset": 7, "limit": 30}
    depth = {"type": "object", "properties": {"depth": {"type": "integer", "minimum": 1, "maximum": 10}}}
    assert drop_empty_optionals(depth, {"depth": 50}) == {"depth": 10}
    # a required argument is the model's to get right: VALIDATE says what is wrong with it
    assert drop_empty_optionals(GREP, {"pattern": ""}) == {"pattern": ""}
    assert drop_empty_optionals(READ, {"file_path": "a.py", "surprise": ""}) == {"file_path": "a.py", "surprise": ""}


SCHEMA_OF = {t.name: t.definition.parameters for t in all_tools()}
EMPTY = st.sampled_from(["", "  ", None, 0, -3, [], {}])


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(SCHEMA_OF)), st.data())
def test_every_tool_accepts_its_required_arguments_plus_any_empty_optional_ones(name: str, data: Any) -> None:
    schema = SCHEMA_OF[name]
    required = schema.get("required", [])
    props = schema["properties"]
    fill = {"string": "x", "integer": 1, "boolean": True, "array": ["x"]}
    args: dict[str, Any] = {p: fill[props[p]["type"]] for p in required}
    optional = [p for p in props if p not in required]
    for param in data.draw(st.lists(st.sampled_from(optional), unique=True)) if optional else []:
        value = data.draw(EMPTY)
        if value in (0, -3) and props[param].get("type") != "integer":
            value = ""
        args[param] = value
    validate_arguments(name, schema, drop_empty_optionals(schema, args))  # raises when refused


def test_the_lenient_reader_drops_empty_optionals_of_every_kind_of_call() -> None:
    lenient, strict = ReplyReader(SCHEMAS, lenient=True), ReplyReader(SCHEMAS)
    text = tagged("read_file", {"file_path": "a.py", "offset": "", "limit": "0"})
    (call,) = lenient.read(text_response(text)).calls
    assert call.parse_error is None and call.arguments == {"file_path": "a.py"}
    (refused,) = strict.read(text_response(text)).calls
    assert refused.parse_error is not None and "<offset> is not a valid integer" in refused.parse_error
    fenced = '```json\n{"name": "grep", "arguments": {"pattern": "x", "glob_filter": "", "path": ""}}\n```'
    assert [c.arguments for c in lenient.read(text_response(fenced)).calls] == [{"pattern": "x"}]
    assert [c.arguments for c in strict.read(text_response(fenced)).calls] == [
        {"pattern": "x", "glob_filter": "", "path": ""}]
    structured = tool_call_response(("grep", {"pattern": "x", "glob_filter": ""}))
    assert [c.arguments for c in lenient.read(structured).calls] == [{"pattern": "x"}]
    assert strict.read(structured).calls == tuple(structured.tool_calls)


def test_the_lenient_constrained_reader_drops_them_before_checking_the_schema() -> None:
    reply = json.dumps({"tool": "read_file", "arguments": {"file_path": "a.py", "offset": 0}})
    (call,) = ReplyReader(SCHEMAS, constrained=True, lenient=True).read(text_response(reply)).calls
    assert call.parse_error is None and call.arguments == {"file_path": "a.py"}
    (refused,) = ReplyReader(SCHEMAS, constrained=True).read(text_response(reply)).calls
    assert refused.parse_error is not None and "less than the minimum of 1" in refused.parse_error


async def test_read_past_the_end_shows_the_length_and_the_last_lines_for_a_small_model(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 31)))
    (tmp_path / "short.py").write_text("a = 1\nb = 2\n")
    env = LocalExecutionEnvironment(str(tmp_path))
    read = read_file_tool().executor
    small = ToolContext(lenient=True)
    out = await read({"file_path": "long.txt", "offset": 100}, env, small)
    text = out if isinstance(out, str) else out.text
    assert text.startswith("long.txt has 30 lines, so offset 100 is past its end; its last 20 lines:\n")
    assert " 11 | line 11" in text and " 30 | line 30" in text and "line 10\n" not in text
    out = await read({"file_path": "short.py", "offset": 9}, env, small)
    assert (out if isinstance(out, str) else out.text) == (
        "short.py has 2 lines, so offset 9 is past its end; its content:\n  1 | a = 1\n  2 | b = 2")
    out = await read({"file_path": "short.py", "offset": 9}, env, ToolContext())
    assert (out if isinstance(out, str) else out.text) == "short.py has fewer than 9 lines; nothing to show at offset 9."


async def test_a_small_model_session_runs_the_calls_it_meant(harness) -> None:
    h = harness("text", [
        text_response(tagged("grep", {"pattern": "total", "glob_filter": "", "path": ""})),
        text_response(tagged("read_file", {"file_path": "solution.py", "offset": "100"})),
        text_response("It defines total."),
    ])
    (h.root / "solution.py").write_text("def total(values):\n    return sum(values)\n")
    assert h.session.small_model
    await h.session.submit("Where is total?")
    ends = h.of(ev.ToolCallEnd)
    assert [e.is_error for e in ends] == [False, False]
    assert "solution.py:1:def total(values):" in (ends[0].output or "")
    assert (ends[1].output or "").startswith("solution.py has 2 lines, so offset 100 is past its end")


async def test_small_model_rescues_can_be_turned_off(harness) -> None:
    h = harness("text", [text_response(tagged("grep", {"pattern": "x", "glob_filter": ""})), text_response("ok")],
                SessionConfig(small_model_rescues=False))
    assert not h.session.small_model
    await h.session.submit("find x")
    (end,) = h.of(ev.ToolCallEnd)
    assert end.is_error and "Invalid glob pattern ''" in (end.error or "")
