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


async def test_the_model_follows_the_suggestion_and_the_file_is_deleted(harness) -> None:
    h = harness("text", [
        text_response('<tool name="delete_file"><file_path>obsolete.txt</file_path></tool>'),
        calls("text", ("shell", {"command": "rm -- obsolete.txt"})),
        text_response("Deleted."),
    ])
    (h.root / "obsolete.txt").write_text("old data\n")
    await h.session.submit("Delete obsolete.txt")
    first = h.of(ev.ToolCallEnd)[0]
    assert first.is_error and "<command>rm -- obsolete.txt</command>" in (first.error or "")
    assert not (h.root / "obsolete.txt").exists()
