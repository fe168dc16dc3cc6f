"""The one call path (issue 30): a face's Pipeline from ``build_pipeline``, its typed events,
``before_change`` honoured by every tool that changes the workspace, and background jobs
through a wrapped environment. Real environments, real bash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.environments.logging_and_read_only import LoggingExecutionEnvironment
from codeloop.tools.call_path import PipelineCall, build_pipeline
from codeloop.tools.jobs import JobTable, add_job_tools
from codeloop.tools.sets import all_tools_registry
from codeloop.tools.tool_events import ToolCallEnded, ToolCallOutput, ToolCallStarted, ToolEvent
from codeloop.tools.workspace_ops import PlannedChange


async def test_the_sink_gets_typed_events_in_lifecycle_order(tmp_path: Path) -> None:
    seen: list[ToolEvent] = []
    pipeline = build_pipeline(all_tools_registry(), LocalExecutionEnvironment(tmp_path), events=seen.append)
    result = await pipeline.run(PipelineCall("shell", {"command": "echo hi"}, call_id="c1"))
    assert not result.is_error
    assert seen[0] == ToolCallStarted("shell", "c1", {"command": "echo hi"})
    assert ToolCallOutput("c1", "stdout", "hi\n") in seen[1:-1]
    end = seen[-1]
    assert isinstance(end, ToolCallEnded) and end.call_id == "c1" and end.error is None
    assert end.output == result.full_output and "hi" in end.output
    await pipeline.run(PipelineCall("nope", "{}"))
    failed = seen[-1]
    assert isinstance(failed, ToolCallEnded) and failed.is_error and failed.output is None
    assert failed.error is not None and failed.error.startswith("Unknown tool 'nope'")


PATCH = "*** Begin Patch\n*** Add File: p.txt\n+patched\n*** End Patch\n"
CALLS = [
    ("write_file", {"file_path": "w.txt", "content": "x\n"}, ("write", "w.txt")),
    ("edit_file", {"file_path": "e.txt", "old_string": "old", "new_string": "new"}, ("write", "e.txt")),
    ("apply_patch", {"patch": PATCH}, ("write", "p.txt")),
    ("shell", {"command": "touch s.txt"}, ("process", None)),
]


@pytest.mark.parametrize(("name", "args", "change"), CALLS, ids=[c[0] for c in CALLS])
async def test_every_tool_that_changes_the_workspace_calls_before_change_first(
        tmp_path: Path, name: str, args: dict[str, object], change: tuple[str, str | None]) -> None:
    (tmp_path / "e.txt").write_text("old\n")
    pipeline = build_pipeline(all_tools_registry(), LocalExecutionEnvironment(tmp_path))
    heard: list[PlannedChange] = []
    ok = await pipeline.run(PipelineCall(name, args, before_change=heard.append))
    assert not ok.is_error, ok.output
    assert [(c.kind, c.path) for c in heard] == [change]

    def refuse(planned: PlannedChange) -> None:
        raise OSError("journal full")

    for leftover in ("w.txt", "p.txt", "s.txt"):
        (tmp_path / leftover).unlink(missing_ok=True)
    (tmp_path / "e.txt").write_text("old\n")
    refused = await pipeline.run(PipelineCall(name, args, before_change=refuse))
    assert refused.is_error and "journal full" in refused.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.txt"]
    assert (tmp_path / "e.txt").read_text() == "old\n"


async def test_background_jobs_work_through_a_wrapped_environment(tmp_path: Path) -> None:
    registry = all_tools_registry()
    table = JobTable()
    add_job_tools(registry, table)
    env = LoggingExecutionEnvironment(LocalExecutionEnvironment(tmp_path))
    pipeline = build_pipeline(registry, env)
    started = await pipeline.run(PipelineCall("shell", {"command": "echo started; sleep 30", "background": True}))
    try:
        assert not started.is_error, started.output
        assert "Started background job job1" in started.output
        listed = await pipeline.run(PipelineCall("job_output", json.dumps({})))
        assert "job1: running: echo started; sleep 30" in listed.output
    finally:
        table.kill_all()
