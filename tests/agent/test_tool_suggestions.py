"""Invented tool names get the equivalent real call (a 1.5B model called ``delete_file``
in the task benchmark and never found ``shell``)."""

from __future__ import annotations

import shlex
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.llm.adapters.scripted import text_response
from codeloop.profiles import create_profile
from codeloop.tools.suggestions import equivalent_call

from .agent_harness import calls

SCHEMAS: dict[str, dict[str, Any]] = {
    d.name: d.parameters for d in create_profile("text").tool_registry.definitions()}


def test_common_inventions_map_to_real_tools_with_the_models_arguments() -> None:
    assert equivalent_call("delete_file", {"file_path": "obsolete.txt"}, SCHEMAS) == (
        "shell", {"command": "rm -- obsolete.txt"})
    assert equivalent_call("execute_command", {"command": "python3 count.py"}, SCHEMAS) == (
        "shell", {"command": "python3 count.py"})
    assert equivalent_call("create_file", {"path": "a.py", "content": "x = 1\n"}, SCHEMAS) == (
        "write_file", {"file_path": "a.py", "content": "x = 1\n"})
    assert equivalent_call("cat", {"path": "a.py"}, SCHEMAS) == ("read_file", {"file_path": "a.py"})
    assert equivalent_call("Remove-File", None, SCHEMAS) == ("shell", {"command": "rm -- PATH"})


def test_no_suggestion_without_a_clear_equivalent_or_when_the_tool_is_missing() -> None:
    assert equivalent_call("frobnicate", {"x": 1}, SCHEMAS) is None
    no_shell = {k: v for k, v in SCHEMAS.items() if k != "shell"}
    assert equivalent_call("delete_file", {"file_path": "a"}, no_shell) is None
    # a profile whose shell takes other parameters gets no suggestion it could not follow
    odd = {**SCHEMAS, "shell": {"type": "object", "properties": {"argv": {"type": "array"}}}}
    assert equivalent_call("run", {"command": "ls"}, odd) is None


@given(st.text(min_size=1, max_size=80))
def test_a_suggested_delete_removes_exactly_the_named_path(path: str) -> None:
    found = equivalent_call("delete_file", {"file_path": path}, SCHEMAS)
    if not path.strip():
        assert found == ("shell", {"command": "rm -- PATH"})
        return
    assert found is not None
    assert shlex.split(found[1]["command"]) == ["rm", "--", path.strip()]


@given(st.text(max_size=30), st.dictionaries(st.text(max_size=10), st.text(max_size=20) | st.integers(), max_size=4))
def test_any_name_and_arguments_give_a_valid_suggestion_or_none(name: str, args: dict[str, Any]) -> None:
    found = equivalent_call(name, args, SCHEMAS)
    if found is not None:
        tool, suggested = found
        assert tool in SCHEMAS and set(suggested) <= set(SCHEMAS[tool]["properties"])


async def test_a_small_models_wish_with_a_complete_equivalent_runs_as_that_call(harness) -> None:
    # Seen with the 1.5B model (dev task 10): delete_file(obsolete.txt) refused with "call shell:
    # rm -- obsolete.txt", then three empty replies. The call it meant now runs, through the pipeline.
    h = harness("text", [
        text_response('<tool name="delete_file"><file_path>obsolete.txt</file_path></tool>'),
        text_response("Deleted."),
    ])
    (h.root / "obsolete.txt").write_text("old data\n")
    (h.root / "keep.txt").write_text("keep me\n")
    assert await h.session.submit("Delete obsolete.txt") == "Deleted."
    (start,) = h.of(ev.ToolCallStart)
    assert (start.tool_name, start.arguments) == ("shell", {"command": "rm -- obsolete.txt"})
    assert not (h.root / "obsolete.txt").exists() and (h.root / "keep.txt").exists()


async def test_a_wish_without_a_complete_equivalent_gets_the_suggestion_and_the_model_follows_it(harness) -> None:
    h = harness("text", [
        text_response("<tool name=\"delete_file\"></tool>"),
        calls("text", ("shell", {"command": "rm -- obsolete.txt"})),
        text_response("Deleted."),
    ])
    (h.root / "obsolete.txt").write_text("old data\n")
    await h.session.submit("Delete obsolete.txt")
    first = h.of(ev.ToolCallEnd)[0]
    assert first.is_error and "<command>rm -- PATH</command>" in (first.error or "")
    assert not (h.root / "obsolete.txt").exists()


def test_a_meant_call_is_an_equivalent_with_nothing_left_to_fill_in() -> None:
    from codeloop.tools.suggestions import meant_call

    assert meant_call("delete_file", {"file_path": "a b.txt"}, SCHEMAS) == ("shell", {"command": "rm -- 'a b.txt'"})
    assert meant_call("delete_file", {}, SCHEMAS) is None
    assert meant_call("create_file", {"path": "x.py"}, SCHEMAS) is None  # no content given
    assert meant_call("create_file", {"path": "x.py", "content": "x = 1\n"}, SCHEMAS) == (
        "write_file", {"file_path": "x.py", "content": "x = 1\n"})
    assert meant_call("run", {}, SCHEMAS) is None


async def test_a_run_command_wish_runs_as_the_shell_call(harness) -> None:
    h = harness("text", [text_response('{"name": "run_command", "arguments": {"cmd": "ls"}}'), text_response("ok")])
    (h.root / "seen.txt").write_text("x\n")
    await h.session.submit("go")
    (end,) = h.of(ev.ToolCallEnd)
    assert end.tool_name == "shell" and "seen.txt" in (end.output or "")
