"""Checkpoints and rewind: real file tools on a real local workspace, byte-exact restores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codeloop.agent import events as ev
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.sessions import (
    Checkpoints,
    RewindRefusedError,
    SessionLog,
    load_events,
    rebuild_history,
    rewind,
)
from codeloop.tools.apply_patch import apply_patch_tool
from codeloop.tools.edit import edit_file_tool
from codeloop.tools.files import write_file_tool
from codeloop.tools.pipeline import execute_tool_call
from codeloop.tools.registry import ToolRegistry

SID = "rw"


class Driver:
    """Plays a session: logs events, runs real tool calls through the pipeline with its checkpoint hook."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.env = LocalExecutionEnvironment(workspace)
        self.registry = ToolRegistry.of([write_file_tool(), edit_file_tool(), apply_patch_tool()])
        self.log = SessionLog(SID)
        self.checkpoints = Checkpoints(SID, workspace)
        self.calls = 0
        self.emit(ev.SessionStart(session_id=SID, profile="openai", model="m", working_directory=str(workspace)))

    def emit(self, event: ev.SessionEvent) -> None:
        self.log.append(event)
        self.checkpoints.observe(event)

    async def turn(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.emit(ev.AssistantTextStart(session_id=SID))
        self.emit(ev.AssistantTextEnd(session_id=SID, text=f"turn {self.checkpoints.turn + 1}",
                                      tool_call_count=len(calls)))
        for name, args in calls:
            self.calls += 1
            cid = f"c{self.calls}"
            self.emit(ev.ToolCallStart(session_id=SID, tool_name=name, call_id=cid, arguments=args))
            result = await execute_tool_call(self.registry, name, args, self.env, checkpoint=self.checkpoints)
            assert not result.is_error, result.output
            self.emit(ev.ToolCallEnd(session_id=SID, tool_name=name, call_id=cid, output=result.full_output))


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_rewind_restores_files_byte_exact_incl_created_and_deleted(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_bytes(b"original\r\nbytes \xff\xfe\n")
    (ws / "gone.txt").write_bytes(b"will be deleted\n")
    d = Driver(ws)
    d.emit(ev.UserInput(session_id=SID, content="task"))
    await d.turn(("write_file", {"file_path": "new/created.txt", "content": "hello\n"}))
    after_turn_1 = snapshot(ws)
    await d.turn(("write_file", {"file_path": "keep.txt", "content": "changed\n"}),
                 ("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch\n"}))
    d.emit(ev.UserInput(session_id=SID, content="more"))
    await d.turn(("edit_file", {"file_path": "new/created.txt", "old_string": "hello", "new_string": "bye"}))
    d.log.close()
    assert snapshot(ws) != after_turn_1

    result = rewind(SID, 1)
    assert snapshot(ws) == after_turn_1
    assert set(result.restored) == {"keep.txt", "gone.txt", "new/created.txt"}
    events = load_events(SID)
    assert [e.kind for e in events][-2:] == ["tool_call_start", "tool_call_end"]
    assert sum(e.kind == "assistant_text_end" for e in events) == 1
    assert [t.content for t in rebuild_history(events) if hasattr(t, "content")][:2] == ["task", "turn 1"]

    result = rewind(SID, 0)
    assert result.deleted == ("new/created.txt",)
    assert snapshot(ws) == {"gone.txt": b"will be deleted\n", "keep.txt": b"original\r\nbytes \xff\xfe\n"}
    assert [e.kind for e in load_events(SID)] == ["session_start"]


async def test_rewind_refuses_and_writes_nothing_when_a_file_changed_outside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a0\n")
    d = Driver(ws)
    d.emit(ev.UserInput(session_id=SID, content="task"))
    await d.turn(("write_file", {"file_path": "a.txt", "content": "a1\n"}),
                 ("write_file", {"file_path": "b.txt", "content": "b1\n"}))
    await d.turn(("write_file", {"file_path": "b.txt", "content": "b2\n"}))
    d.log.close()
    (ws / "b.txt").write_text("edited by the user\n")
    log_before = (Path(d.log.path)).read_bytes()
    files_before = snapshot(ws)
    with pytest.raises(RewindRefusedError, match=r"b\.txt changed outside the session since turn 2"):
        rewind(SID, 0)
    assert snapshot(ws) == files_before
    assert Path(d.log.path).read_bytes() == log_before
    manifest = json.loads((d.checkpoints.directory / "turns" / "2.json").read_text())
    assert "b.txt" in manifest["files"]


async def test_rewind_out_of_range_is_refused(tmp_path: Path) -> None:
    d = Driver(tmp_path)
    await d.turn()
    d.log.close()
    with pytest.raises(RewindRefusedError, match=r"has turns 0\.\.1"):
        rewind(SID, 5)


async def test_a_shell_call_that_may_write_is_marked_uncovered_and_a_read_only_one_is_not(tmp_path: Path) -> None:
    from codeloop.tools.shell import shell_tool

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    d = Driver(ws)
    d.registry.register(shell_tool())
    await d.turn(("shell", {"command": "ls -la && cat a.txt | grep a"}))
    await d.turn(("write_file", {"file_path": "b.txt", "content": "b\n"}), ("shell", {"command": "rm a.txt"}))
    d.log.close()
    assert d.checkpoints.uncovered(1) == []
    [mark] = d.checkpoints.uncovered(2)
    assert (mark.tool, mark.command, mark.describe()) == ("shell", "rm a.txt", "shell `rm a.txt`")
    with pytest.raises(RewindRefusedError, match=r"turn 2 ran shell `rm a.txt`, which no checkpoint covers"):
        rewind(SID, 1)
    assert (ws / "b.txt").exists() and not (ws / "a.txt").exists()  # nothing was restored
    assert rewind(SID, 2).turn == 2
