"""``codeloop acp`` driven as an editor drives it (issue 38): the SDK's client side over a
real subprocess, against the loopback scripted model server."""

from __future__ import annotations

from pathlib import Path

from acp import schema as s
from acp_editor import Editor, codeloop_acp
from chat_server import ChatServer, text_reply, tool_reply


async def test_a_prompt_round_trip_streams_text_and_tool_calls_as_session_updates(
        server: ChatServer, workspace: Path) -> None:
    server.replies.extend([
        tool_reply("write_file", {"file_path": "hello.py", "content": "print('hi')\n"}),
        text_reply("I wrote hello.py."),
    ])
    editor = Editor()
    async with codeloop_acp(editor, workspace, server.base_url, "--approval", "never-ask") as agent:
        session_id = await agent.start_session(workspace)
        answer = await agent.conn.prompt(session_id=session_id, prompt=[s.TextContentBlock(type="text",
                                                                                           text="write hello.py")])
        assert answer.stop_reason == "end_turn"
        assert (workspace / "hello.py").read_text() == "print('hi')\n"
        assert editor.text() == "I wrote hello.py."
        started = editor.of(s.ToolCallStart)
        assert [(c.kind, c.status, c.raw_input["file_path"]) for c in started] == [("edit", "pending", "hello.py")]
        assert started[0].locations[0].path == str(workspace / "hello.py")
        ended = [u for u in editor.of(s.ToolCallProgress) if u.status in ("completed", "failed")]
        assert [(u.tool_call_id, u.status) for u in ended] == [(started[0].tool_call_id, "completed")]
        # The prompt reached the model as the user's message.
        assert any(m.get("content") == "write hello.py" for m in server.requests[0]["messages"])
    agent.check_protocol()
    assert agent.proc.returncode == 0
