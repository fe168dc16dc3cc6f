"""No edit over changes the model has not seen (issue 19): in a session, write_file, edit_file
and apply_patch refuse a file that changed on disk since the session last read or wrote it,
and leave the workspace byte-identical. Every call goes through the tool pipeline."""

from __future__ import annotations

import itertools
from typing import Any

from codeloop.tools import ToolResult, execute_tool_call
from codeloop.tools.registry import ToolContext

from .test_patch_transaction import patch, tree
from .workspace_fixture import Workspace

_SESSIONS = itertools.count()


class Session:
    """Tool calls of one session (a fresh id per test: the registry of seen files is shared)."""

    def __init__(self, ws: Workspace, session_id: str | None = "new") -> None:
        self.ws = ws
        self.ctx = ToolContext(session_id=None if session_id is None else f"stale-{next(_SESSIONS)}")

    async def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        return await execute_tool_call(self.ws.registry, name, args, self.ws.env, ctx=self.ctx)


def _refused(result: ToolResult, path: str) -> None:
    assert result.is_error, result.output
    assert f"{path} has changed on disk since you last read or wrote it" in result.output
    assert f"Call read_file on {path} again" in result.output


async def test_edit_file_refuses_a_file_changed_since_it_was_read_and_works_after_reading_again(
    ws: Workspace,
) -> None:
    ws.write("a.txt", "one\ntwo\n")
    s = Session(ws)
    assert not (await s.call("read_file", {"file_path": "a.txt"})).is_error
    ws.write("a.txt", "one\ntwo\nthree (added by the user)\n")
    before = tree(ws.root)
    _refused(await s.call("edit_file", {"file_path": "a.txt", "old_string": "two", "new_string": "2"}), "a.txt")
    assert tree(ws.root) == before
    assert not (await s.call("read_file", {"file_path": "a.txt"})).is_error
    assert not (await s.call("edit_file", {"file_path": "a.txt", "old_string": "two", "new_string": "2"})).is_error
    assert ws.read("a.txt") == b"one\n2\nthree (added by the user)\n"


async def test_write_file_refuses_a_file_changed_since_the_session_wrote_it(ws: Workspace) -> None:
    s = Session(ws)
    assert not (await s.call("write_file", {"file_path": "c.json", "content": '{"a": 1}\n'})).is_error
    ws.write("c.json", '{"a": 1, "b": 2}\n')
    _refused(await s.call("write_file", {"file_path": "c.json", "content": '{"a": 3}\n'}), "c.json")
    assert ws.read("c.json") == b'{"a": 1, "b": 2}\n'


async def test_apply_patch_refuses_when_any_file_of_it_changed_and_writes_nothing(ws: Workspace) -> None:
    ws.write("keep.txt", "k1\nk2\n")
    ws.write("b.txt", "b1\nb2\n")
    s = Session(ws)
    for path in ("keep.txt", "b.txt"):
        assert not (await s.call("read_file", {"file_path": path})).is_error
    ws.write("b.txt", "b1\nb2\nb3\n")
    before = tree(ws.root)
    text = patch("*** Add File: new.txt", "+n", "*** Update File: keep.txt", "@@", "-k1", "+K1",
                 "*** Update File: b.txt", "@@", "-b1", "+B1")
    result = await s.call("apply_patch", {"patch": text})
    _refused(result, "b.txt")
    assert "Nothing was written" in result.output
    assert tree(ws.root) == before


async def test_apply_patch_typed_into_the_shell_is_refused_the_same_way(ws: Workspace) -> None:
    ws.write("a.txt", "x\n")
    s = Session(ws)
    await s.call("read_file", {"file_path": "a.txt"})
    ws.write("a.txt", "y\n")
    text = patch("*** Update File: a.txt", "@@", "-y", "+z")
    _refused(await s.call("shell", {"command": f"apply_patch <<'EOF'\n{text}EOF\n"}), "a.txt")
    assert ws.read("a.txt") == b"y\n"


async def test_a_sessions_own_writes_count_as_seen(ws: Workspace) -> None:
    ws.write("a.txt", "a\r\nb\r\n")
    s = Session(ws)
    await s.call("read_file", {"file_path": "a.txt"})
    steps: list[tuple[str, dict[str, Any]]] = [
        ("edit_file", {"file_path": "a.txt", "old_string": "a", "new_string": "A\nA2"}),
        ("apply_patch", {"patch": patch("*** Update File: a.txt", "@@", "-b", "+B")}),
        ("write_file", {"file_path": "a.txt", "content": "whole\nnew\n"}),
        ("edit_file", {"file_path": "a.txt", "old_string": "new", "new_string": "newer"}),
    ]
    for name, args in steps:
        result = await s.call(name, args)
        assert not result.is_error, (name, result.output)
    assert ws.read("a.txt") == b"whole\r\nnewer\r\n"


async def test_a_deleted_file_can_be_created_again_by_the_same_session(ws: Workspace) -> None:
    ws.write("a.txt", "a\n")
    s = Session(ws)
    await s.call("read_file", {"file_path": "a.txt"})
    assert not (await s.call("apply_patch", {"patch": patch("*** Delete File: a.txt")})).is_error
    ws.write("a.txt", "someone else's\n")
    result = await s.call("write_file", {"file_path": "a.txt", "content": "mine\n"})
    assert "you have not read it in this session" in result.output
    assert ws.read("a.txt") == b"someone else's\n"


async def test_read_many_files_records_the_version_it_showed(ws: Workspace) -> None:
    ws.write("a.txt", "a\n")
    s = Session(ws)
    await s.call("read_many_files", {"paths": ["a.txt"]})
    ws.write("a.txt", "b\n")
    _refused(await s.call("edit_file", {"file_path": "a.txt", "old_string": "b", "new_string": "c"}), "a.txt")


async def test_an_unread_file_can_still_be_edited_and_untracked_calls_are_never_refused(ws: Workspace) -> None:
    ws.write("a.txt", "a\n")
    s = Session(ws)
    assert not (await s.call("edit_file", {"file_path": "a.txt", "old_string": "a", "new_string": "b"})).is_error
    one_shot = Session(ws, session_id=None)
    await one_shot.call("read_file", {"file_path": "a.txt"})
    ws.write("a.txt", "c\n")
    assert not (await one_shot.call("edit_file", {"file_path": "a.txt", "old_string": "c", "new_string": "d"})).is_error
    assert ws.read("a.txt") == b"d\n"
