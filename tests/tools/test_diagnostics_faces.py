"""Diagnostics after edits are the agent face's: the relay and spaces run their edits through the
same pipeline without its WATCH step, so their texts stay their specs' (docs/tools.md)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from codeloop.relay.commands import CreateFile, EditFile
from codeloop.relay.executor import ExecutionLimits, execute_command
from codeloop.relay.results import CommandResult
from codeloop.tools import pipeline
from codeloop.tools.relay_tools import relay_pipeline

from .test_face_edit_properties import _in_workspace, _spaces

BROKEN = "def f():\nreturn (1234\n"  # as long as CLEAN: the faces' byte counts are alike
CLEAN = "def f():\n    return 1\n"


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every call the pipeline runs, with the WATCH step it was given."""
    seen: list[tuple[str, Any]] = []
    real = pipeline.run_call

    async def spy(tool: Any, call: Any, env: Any, ctx: Any, checkpoint: Any, watch: Any, after: Any) -> Any:
        seen.append((call.name, watch))
        return await real(tool, call, env, ctx, checkpoint, watch, after)

    monkeypatch.setattr(pipeline, "run_call", spy)
    return seen


def test_relay_edits_of_python_files_get_no_diagnostics(watched: list[tuple[str, Any]]) -> None:
    def run(edited_line: str, new_file: str) -> list[CommandResult]:
        async def go(env: Any) -> list[CommandResult]:
            return [await execute_command(cmd, relay_pipeline(env, "permissive", 4000), "permissive", ExecutionLimits(),
                                          lambda effect: None)
                    for cmd in (CreateFile("a.py", CLEAN), EditFile("a.py", 2, 2, edited_line),
                                CreateFile("b.py", new_file))]

        return _in_workspace(b"", go)[0]  # type: ignore[no-any-return]

    broken, clean = run("return (1234\n", BROKEN), run("    return 2\n", CLEAN)
    assert all(r.success for r in broken) and broken == clean, (broken, clean)
    assert [name for name, _ in watched] == ["CREATE_FILE", "EDIT_FILE", "CREATE_FILE"] * 2
    assert all(watch is None for _, watch in watched), watched


def test_spaces_edits_of_python_files_get_no_diagnostics(watched: list[tuple[str, Any]]) -> None:
    def run(*ops: dict[str, Any]) -> list[dict[str, Any]]:
        events, _ = _spaces(b"", *ops)
        for event in events:
            event.pop("durationMs", None)
            event.pop("timestamp", None)
        return events

    def create(path: str, text: str) -> dict[str, Any]:
        return {"type": "createFile", "path": path, "overwrite": True,
                "content": base64.b64encode(text.encode()).decode(), "encoding": "base64"}

    edit = {"type": "editFile", "path": "a.py", "edits": [{"oldContent": "    return 1", "newContent": "return (1234"}]}
    broken = run(create("a.py", CLEAN), edit, create("b.py", BROKEN))
    clean = run(create("a.py", CLEAN), {**edit, "edits": [{"oldContent": "    return 1", "newContent": "    return 2"}]},
                create("b.py", CLEAN))
    assert all(e["success"] for e in broken) and broken == clean, (broken, clean)
    assert watched and all(watch is None for _, watch in watched), watched
