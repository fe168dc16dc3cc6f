"""``codeloop acp`` driven as an editor drives it (issue 38): the SDK's client side over a
real subprocess, against the loopback scripted model server."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import schema as s
from acp_editor import WAIT, Editor, codeloop_acp
from chat_server import ChatServer, text_reply, tool_reply
from test_nothing_outlives_cli import alive, descendants
from test_run_cli import CODELOOP, isolated_env


async def test_a_prompt_round_trip_streams_text_and_tool_calls_as_session_updates(
        server: ChatServer, workspace: Path) -> None:
    server.replies.extend([
        tool_reply("write_file", {"file_path": "hello.py", "content": "print('hi')\n"}),
        tool_reply("write_file", {"file_path": "hello.py", "content": "print('bye')\n"}, "call_2"),
        text_reply("I wrote hello.py."),
    ])
    editor = Editor()
    async with codeloop_acp(editor, workspace, server.base_url, "--approval", "never-ask") as agent:
        session_id = await agent.start_session(workspace)
        answer = await agent.conn.prompt(session_id=session_id, prompt=[s.TextContentBlock(type="text",
                                                                                           text="write hello.py")])
        assert answer.stop_reason == "end_turn"
        assert (workspace / "hello.py").read_text() == "print('bye')\n"
        assert editor.text() == "I wrote hello.py."
        started = editor.of(s.ToolCallStart)
        assert [(c.kind, c.status, c.raw_input["file_path"]) for c in started] == [
            ("edit", "pending", "hello.py"), ("edit", "pending", "hello.py")]
        assert started[0].locations[0].path == str(workspace / "hello.py")
        ended = [u for u in editor.of(s.ToolCallProgress) if u.status in ("completed", "failed")]
        assert [(u.tool_call_id, u.status) for u in ended] == [(c.tool_call_id, "completed") for c in started]
        # Each edit is shown as a diff of the file it wrote (a new file has no old text).
        diffs = [[(d.path, d.old_text, d.new_text) for d in u.content if isinstance(d, s.FileEditToolCallContent)]
                 for u in ended]
        hello = str(workspace / "hello.py")
        assert diffs == [[(hello, None, "print('hi')\n")], [(hello, "print('hi')\n", "print('bye')\n")]]
        # Each model call's context use (the scripted server reports 10 + 5 tokens), against the window.
        usage = editor.of(s.UsageUpdate)
        assert [u.used for u in usage] == [15, 15, 15] and all(u.size > 15 for u in usage)
        # The prompt reached the model as the user's message.
        assert any(m.get("content") == "write hello.py" for m in server.requests[0]["messages"])
    agent.check_protocol()
    assert agent.proc.returncode == 0


def _prompt(text: str) -> list[s.TextContentBlock]:
    return [s.TextContentBlock(type="text", text=text)]


def _store(workspace: Path) -> list[dict[str, Any]]:
    listed = subprocess.run([CODELOOP, "approvals", "list", "--all", "--json"], capture_output=True, text=True,
                            env=isolated_env(workspace), timeout=WAIT)
    assert listed.returncode == 0, listed.stderr
    return list(json.loads(listed.stdout))


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


async def test_permission_requests_answered_allow_then_reject_run_once_and_not_at_all(
        server: ChatServer, workspace: Path) -> None:
    server.replies.extend([
        tool_reply("shell", {"command": "echo one > one.txt"}, "call_1"),
        tool_reply("shell", {"command": "echo two > two.txt"}, "call_2"),
        text_reply("done"),
    ])
    editor = Editor(answers=["allow_once", "reject_once"])
    async with codeloop_acp(editor, workspace, server.base_url, "--approval", "on-risk") as agent:
        session_id = await agent.start_session(workspace)
        answer = await agent.conn.prompt(session_id=session_id, prompt=_prompt("make the files"))
        assert answer.stop_reason == "end_turn"
    agent.check_protocol()
    assert (workspace / "one.txt").read_text() == "one\n"
    assert not (workspace / "two.txt").exists()
    asked = [(call.tool_call_id, call.title, [o.kind for o in options]) for call, options in editor.permissions]
    assert asked == [("call_1", "echo one > one.txt", ["allow_once", "allow_always", "reject_once"]),
                     ("call_2", "echo two > two.txt", ["allow_once", "allow_always", "reject_once"])]
    # The editor knew each tool call before it was asked about it.
    started = editor.of(s.ToolCallStart)
    assert [(c.tool_call_id, c.kind, c.title) for c in started] == [
        ("call_1", "execute", "echo one > one.txt"), ("call_2", "execute", "echo two > two.txt")]
    ends = {u.tool_call_id: u.status for u in editor.of(s.ToolCallProgress) if u.status in ("completed", "failed")}
    assert ends == {"call_1": "completed", "call_2": "failed"}
    # Each answer went to the one store, as the editor's, once; the model was told who refused.
    entries = sorted(_store(workspace), key=lambda e: e["command"])
    assert [(e["command"], e["status"], e["decided_by"]) for e in entries] == [
        ("echo one > one.txt", "ran", "editor"), ("echo two > two.txt", "denied", "editor")]
    assert "denied by editor" in json.dumps(server.requests[2]["messages"])
    assert entries[0]["session"] == session_id


async def test_cancel_mid_command_kills_its_process_tree_and_the_prompt_answers_cancelled(
        server: ChatServer, workspace: Path) -> None:
    server.replies.extend([
        tool_reply("shell", {"command": "sleep 300 & echo $! > started; sleep 300"}),
        text_reply("still here"),
    ])
    editor = Editor()
    below: set[int] = set()
    async with codeloop_acp(editor, workspace, server.base_url, "--approval", "never-ask") as agent:
        try:
            session_id = await agent.start_session(workspace)
            prompt = asyncio.create_task(agent.conn.prompt(session_id=session_id, prompt=_prompt("wait")))
            started = workspace / "started"
            for _ in range(int(WAIT / 0.02)):
                if started.exists() and started.read_text().strip():
                    break
                await asyncio.sleep(0.02)
            child = int(started.read_text())
            # The command's process group: the shell (which execs the last sleep) and its background
            # sleep; codeloop's group guard (one per codeloop process) is not part of it.
            group = os.getpgid(child)
            below = {pid for pid in descendants(agent.proc.pid) if _group_of(pid) == group}
            assert child in below and len(below) >= 2
            await agent.conn.cancel(session_id=session_id)
            answer = await asyncio.wait_for(prompt, WAIT)
            assert answer.stop_reason == "cancelled"
            for _ in range(500):  # a SIGKILL is delivered asynchronously
                if not {pid for pid in below if alive(pid)}:
                    break
                await asyncio.sleep(0.02)
            assert {pid for pid in below if alive(pid)} == set()
            # The server keeps serving the same conversation.
            again = await agent.conn.prompt(session_id=session_id, prompt=_prompt("are you there?"))
            assert again.stop_reason == "end_turn"
            assert editor.text().endswith("still here")
        finally:
            for pid in below:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
    agent.check_protocol()


async def test_session_load_replays_the_history_and_the_conversation_goes_on(
        server: ChatServer, workspace: Path) -> None:
    server.replies.extend([
        tool_reply("write_file", {"file_path": "hello.py", "content": "print('hi')\n"}),
        text_reply("I wrote hello.py."),
        text_reply("It prints hi."),
    ])
    first = Editor()
    async with codeloop_acp(first, workspace, server.base_url, "--approval", "never-ask") as agent:
        session_id = await agent.start_session(workspace)
        await agent.conn.prompt(session_id=session_id, prompt=_prompt("write hello.py"))
    second = Editor()
    async with codeloop_acp(second, workspace, server.base_url, "--approval", "never-ask") as agent:
        await agent.conn.initialize(protocol_version=1)
        await agent.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        replayed = list(second.updates)
        kinds = [type(u).__name__ for u in replayed]
        assert kinds == ["UserMessageChunk", "ToolCallStart", "ToolCallProgress", "AgentMessageChunk"]
        assert replayed[0].content.text == "write hello.py"
        assert (replayed[1].kind, replayed[2].status) == ("edit", "completed")
        assert replayed[3].content.text == "I wrote hello.py."
        answer = await agent.conn.prompt(session_id=session_id, prompt=_prompt("what does it do?"))
        assert answer.stop_reason == "end_turn"
        sent = json.dumps(server.requests[-1]["messages"])
        assert "write hello.py" in sent and "I wrote hello.py." in sent
        unknown = await agent.write_raw_request("session/load", {"cwd": str(workspace), "sessionId": "nope",
                                                                 "mcpServers": []})
        assert unknown["error"]["code"] == -32602
    agent.check_protocol()


@pytest.mark.parametrize("fs", [True, False], ids=["fs-on", "fs-off"])
async def test_reads_see_the_editors_unsaved_buffer_only_when_it_offers_fs(
        server: ChatServer, workspace: Path, fs: bool) -> None:
    (workspace / "notes.txt").write_text("saved text\n")
    (workspace.parent / "secret.txt").write_text("TOPSECRET-42\n")
    # Inside the workspace by name, but a second name of a file outside: the disk read refuses it.
    os.link(workspace.parent / "secret.txt", workspace / "linked.txt")
    server.replies.extend([
        tool_reply("read_file", {"file_path": "notes.txt"}, "call_1"),
        tool_reply("read_file", {"file_path": "../secret.txt"}, "call_2"),
        tool_reply("read_file", {"file_path": "linked.txt"}, "call_3"),
        text_reply("read"),
    ])
    notes = str((workspace / "notes.txt").resolve())
    editor = Editor(buffers={notes: "unsaved text\n"})
    async with codeloop_acp(editor, workspace, server.base_url, "--approval", "never-ask") as agent:
        session_id = await agent.start_session(workspace, fs=fs)
        await agent.conn.prompt(session_id=session_id, prompt=_prompt("read the notes"))
    agent.check_protocol()
    results = json.dumps(server.requests[1]["messages"])
    if fs:
        assert "unsaved text" in results and "saved text" not in results.replace("unsaved text", "")
        assert editor.reads == [notes]  # the paths refused on disk were refused before the editor was asked
    else:
        assert "saved text" in results and "unsaved text" not in results
        assert editor.reads == []
    assert "TOPSECRET-42" not in json.dumps(server.requests[3]["messages"])
    assert "hard link" in json.dumps(server.requests[3]["messages"])


async def test_bad_input_gets_json_rpc_errors_and_the_server_keeps_serving(
        server: ChatServer, workspace: Path) -> None:
    server.replies.extend([text_reply("fine")])
    editor = Editor()
    async with codeloop_acp(editor, workspace, server.base_url) as agent:
        session_id = await agent.start_session(workspace)
        before = len(agent.lines)
        await agent.write_raw(b"this is not json\n")
        await agent.write_raw(b"[1, 2]\n")
        await agent.write_raw(b'{"jsonrpc": "2.0", "id": 900, "method": 5}\n')
        errors = []
        for _ in range(int(WAIT / 0.02)):
            errors = [json.loads(line) for line in agent.lines[before:]]
            if len(errors) == 3:
                break
            await asyncio.sleep(0.02)
        assert [(e["id"], e["error"]["code"]) for e in errors] == [(None, -32700), (None, -32600), (900, -32600)]
        assert (await agent.write_raw_request("no/such_method", {}))["error"]["code"] == -32601
        assert (await agent.write_raw_request("session/prompt", {"sessionId": session_id}))["error"]["code"] == -32602
        unknown = await agent.write_raw_request("session/prompt", {"sessionId": "nope", "prompt": []})
        assert unknown["error"]["code"] == -32602 and "unknown session" in unknown["error"]["data"]["message"]
        # A second prompt while one runs: the first waits for a permission nobody gives yet.
        server.replies.appendleft(tool_reply("shell", {"command": "echo x > x.txt"}))
        first = asyncio.create_task(agent.conn.prompt(session_id=session_id, prompt=_prompt("one")))
        await asyncio.wait_for(editor.asked.wait(), WAIT)
        second = await agent.write_raw_request("session/prompt", {"sessionId": session_id, "prompt": []})
        assert second["error"]["code"] == -32600 and "already running" in second["error"]["data"]["message"]
        editor.hold.set_result("reject_once")
        assert (await asyncio.wait_for(first, WAIT)).stop_reason == "end_turn"
        assert editor.text().endswith("fine")
    agent.check_protocol()
    assert agent.proc.returncode == 0


async def test_resources_and_images_of_a_prompt_reach_the_model(server: ChatServer, workspace: Path) -> None:
    server.replies.extend([text_reply("seen")])
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake-image-bytes").decode()
    editor = Editor()
    async with codeloop_acp(editor, workspace, server.base_url) as agent:
        session_id = await agent.start_session(workspace)
        answer = await agent.conn.prompt(session_id=session_id, prompt=[
            s.TextContentBlock(type="text", text="compare these"),
            s.ResourceContentBlock(type="resource_link", name="app.py", uri="file:///src/app.py"),
            s.EmbeddedResourceContentBlock(type="resource", resource=s.TextResourceContents(
                uri="file:///src/unsaved.py", text="UNSAVED_MARKER = 1")),
            s.ImageContentBlock(type="image", mime_type="image/png", data=png),
        ])
        assert answer.stop_reason == "end_turn"
        bad = await agent.write_raw_request("session/prompt", {"sessionId": session_id, "prompt": [
            {"type": "image", "mimeType": "image/png", "data": "not base64!"}]})
        assert bad["error"]["code"] == -32602 and "base64" in bad["error"]["data"]["message"]
    agent.check_protocol()
    sent = json.dumps(server.requests[0]["messages"])
    assert "compare these" in sent and "[app.py](file:///src/app.py)" in sent
    assert "file:///src/unsaved.py" in sent and "UNSAVED_MARKER = 1" in sent
    assert f"data:image/png;base64,{png}" in sent


async def test_modes_are_the_approval_modes_and_a_switch_applies_to_the_next_prompt(
        server: ChatServer, workspace: Path) -> None:
    server.replies.extend([
        tool_reply("shell", {"command": "echo x > x.txt"}), text_reply("ran"),
        tool_reply("write_file", {"file_path": "plan.txt", "content": "no\n"}),
        text_reply("Plan:\n\n1. Read `app.py`\n2. Add a cache to `fetch_user`\n   - keyed by id\n\nThen run the tests."),
    ])
    editor = Editor()
    async with codeloop_acp(editor, workspace, server.base_url, "--approval", "on-risk") as agent:
        await agent.conn.initialize(protocol_version=1)
        new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert new.modes is not None and new.modes.current_mode_id == "on-risk"
        assert [m.id for m in new.modes.available_modes] == ["on-risk", "always-ask", "never-ask", "plan"]
        await agent.conn.set_session_mode(session_id=new.session_id, mode_id="never-ask")
        await agent.conn.prompt(session_id=new.session_id, prompt=_prompt("make x"))
        assert (workspace / "x.txt").read_text() == "x\n" and editor.permissions == []  # nobody was asked
        await agent.conn.set_session_mode(session_id=new.session_id, mode_id="plan")
        await agent.conn.prompt(session_id=new.session_id, prompt=_prompt("plan it"))
        assert not (workspace / "plan.txt").exists()
        assert "plan mode" in json.dumps(server.requests[3]["messages"])
        unknown = await agent.write_raw_request("session/set_mode", {"sessionId": new.session_id, "modeId": "yolo"})
        assert unknown["error"]["code"] == -32602
    agent.check_protocol()
    assert [u.current_mode_id for u in editor.of(s.CurrentModeUpdate)] == ["never-ask", "plan"]
    # The plan-mode answer's numbered list is the editor's plan (the on-risk answer made none).
    [plan] = editor.of(s.AgentPlanUpdate)
    assert [(e.content, e.status) for e in plan.entries] == [
        ("Read `app.py`", "pending"), ("Add a cache to `fetch_user`", "pending")]


async def test_a_cancelled_prompt_withdraws_the_call_its_permission_request_was_about(
        server: ChatServer, workspace: Path) -> None:
    server.replies.extend([tool_reply("shell", {"command": "echo late > late.txt"}), text_reply("next")])
    editor = Editor()
    async with codeloop_acp(editor, workspace, server.base_url, "--approval", "on-risk") as agent:
        session_id = await agent.start_session(workspace)
        prompt = asyncio.create_task(agent.conn.prompt(session_id=session_id, prompt=_prompt("write late")))
        await asyncio.wait_for(editor.asked.wait(), WAIT)
        await agent.conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(prompt, WAIT)).stop_reason == "cancelled"
        # The editor answers its outstanding request as cancelled (the protocol's rule for clients);
        # an answer arriving after the cancel runs nothing.
        editor.hold.set_result("allow_once")
        again = await agent.conn.prompt(session_id=session_id, prompt=_prompt("go on"))
        assert again.stop_reason == "end_turn"
    agent.check_protocol()
    assert not (workspace / "late.txt").exists()
    [entry] = _store(workspace)
    assert (entry["status"], entry["decided_by"]) == ("withdrawn", "codeloop")


async def test_the_editors_mcp_servers_are_connected_as_tools(server: ChatServer, workspace: Path) -> None:
    mcp_server = str(Path(__file__).parents[1] / "mcp" / "server_app.py")
    server.replies.extend([tool_reply("calc__getenv", {"name": "FROM_EDITOR"}), text_reply("done")])
    editor = Editor()
    async with codeloop_acp(editor, workspace, server.base_url, "--approval", "never-ask") as agent:
        await agent.conn.initialize(protocol_version=1)
        new = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[s.McpServerStdio(
            name="calc", command=sys.executable, args=[mcp_server],
            env=[s.EnvVariable(name="FROM_EDITOR", value="editor-value")])])
        await agent.conn.prompt(session_id=new.session_id, prompt=_prompt("ask the server"))
    agent.check_protocol()
    assert "calc__getenv" in [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert "editor-value" in json.dumps(server.requests[1]["messages"])


async def test_stray_output_of_the_process_goes_to_stderr_never_into_the_protocol(
        server: ChatServer, workspace: Path, tmp_path: Path) -> None:
    # A library that prints (here: at exit, by print and by a raw write to file descriptor 1)
    # must not corrupt the stream the editor parses.
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import atexit, os\n"
        "atexit.register(lambda: (print('STRAY-PRINT'), os.write(1, b'STRAY-WRITE\\n')))\n")
    server.replies.extend([text_reply("fine")])
    editor = Editor()
    env = isolated_env(workspace, PYTHONPATH=os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")])))
    async with codeloop_acp(editor, workspace, server.base_url, env=env) as agent:
        session_id = await agent.start_session(workspace)
        await agent.conn.prompt(session_id=session_id, prompt=_prompt("hello"))
    agent.check_protocol()
    stderr = agent.stderr  # type: ignore[attr-defined]
    assert "STRAY-PRINT" in stderr and "STRAY-WRITE" in stderr
    assert not any(b"STRAY" in line for line in agent.lines)


def test_bad_options_are_one_line_on_stderr_before_any_protocol(workspace: Path) -> None:
    for args in (["--approval", "yolo"], ["--sandbox", "sideways"]):
        done = subprocess.run([CODELOOP, "acp", *args], capture_output=True, text=True, env=isolated_env(workspace),
                              timeout=WAIT, stdin=subprocess.DEVNULL)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr


async def test_an_untrusted_repository_config_cannot_lower_the_approval_mode(
        server: ChatServer, workspace: Path) -> None:
    (workspace / ".codeloop").mkdir()
    (workspace / ".codeloop" / "config.toml").write_text('approval = "never-ask"\n')
    server.replies.extend([tool_reply("shell", {"command": "echo x > x.txt"}), text_reply("done")])
    editor = Editor(answers=["reject_once"])
    async with codeloop_acp(editor, workspace, server.base_url) as agent:
        session_id = await agent.start_session(workspace)
        await agent.conn.prompt(session_id=session_id, prompt=_prompt("make x"))
    agent.check_protocol()
    assert len(editor.permissions) == 1 and not (workspace / "x.txt").exists()
    assert "codeloop trust" in agent.stderr  # type: ignore[attr-defined]


def test_requests_from_a_file_are_answered_and_dev_null_ends_at_once(workspace: Path, tmp_path: Path) -> None:
    # What the help's by-hand example does; stdin that the event loop cannot watch is read by a thread.
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                    "params": {"protocolVersion": 1}}) + "\n")
    with requests.open() as stdin:
        done = subprocess.run([CODELOOP, "acp"], capture_output=True, text=True, env=isolated_env(workspace),
                              timeout=WAIT, stdin=stdin)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    s.InitializeResponse.model_validate(json.loads(line)["result"])
    empty = subprocess.run([CODELOOP, "acp"], capture_output=True, text=True, env=isolated_env(workspace),
                           timeout=WAIT, stdin=subprocess.DEVNULL)
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, "", "")
