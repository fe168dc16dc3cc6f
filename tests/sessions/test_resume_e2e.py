"""Resume and rewind with a real agent Session (ScriptedAdapter, a real ProviderAdapter, over a
real local workspace), wired the way ``codeloop run`` wires these modules."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

from codeloop.agent.config import SessionConfig
from codeloop.agent.session import Session
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response, tool_call_response
from codeloop.llm.client import Client
from codeloop.llm.types import Role
from codeloop.profiles import create_profile
from codeloop.sessions import (
    Recording,
    latest_session,
    load_events,
    record_session,
    rewind,
)
from codeloop.sessions.checkpoints import count_turns


def start(root: Path, script: list[object], resume: str | None = None) -> tuple[Session, ScriptedAdapter, Recording]:
    """A session wired as `codeloop run` wires it."""
    adapter = ScriptedAdapter(script)
    profile = create_profile("openai")
    session = Session(profile, LocalExecutionEnvironment(str(root)), SessionConfig(), Client({"scripted": adapter}))
    recording = record_session(session, root, resume=resume)
    return session, adapter, recording


async def test_resume_continues_the_conversation_and_rewind_undoes_it(tmp_path: Path) -> None:
    first, _, log = start(tmp_path, [
        tool_call_response(("write_file", {"file_path": "notes.txt", "content": "v1\n"})),
        text_response("Wrote notes.txt."),
    ])
    await first.submit("create notes.txt")
    await first.close()
    log.close()
    info = latest_session(tmp_path)
    assert info is not None and info.id == first.id and info.first_input == "create notes.txt"

    second, adapter, log = start(tmp_path, [
        tool_call_response(("write_file", {"file_path": "notes.txt", "content": "v2\n"})),
        text_response("Updated."),
    ], resume=info.id)
    await second.submit("now write v2")
    await second.close()
    log.close()

    sent = adapter.requests[0].messages[1:]
    assert [m.role for m in sent] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.USER]
    assert sent[0].text == "create notes.txt" and sent[3].text == "Wrote notes.txt." and sent[4].text == "now write v2"
    assert (tmp_path / "notes.txt").read_text() == "v2\n"
    assert count_turns(load_events(info.id)) == 4

    rewind(info.id, 2)
    assert (tmp_path / "notes.txt").read_text() == "v1\n"
    rewind(info.id, 0)
    assert not (tmp_path / "notes.txt").exists()


RUNNER = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from test_resume_e2e import start
    from codeloop.llm.adapters.scripted import tool_call_response

    async def main():
        session, _, _ = start(Path(sys.argv[1]), [
            tool_call_response(("write_file", {"file_path": "a.txt", "content": "A\\n"})),
            tool_call_response(("shell", {"command": "echo started; sleep 60"})),
        ])
        print(session.id, flush=True)
        await session.submit("do it")

    asyncio.run(main())
""")


async def test_resume_after_kill_9_mid_tool_call(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(ws), str(Path(__file__).parent)],
                            stdout=subprocess.PIPE, env=os.environ.copy(), start_new_session=True)
    assert proc.stdout is not None
    session_id = proc.stdout.readline().decode().strip()
    log = Path(os.environ["CODELOOP_STATE_DIR"]) / "sessions" / f"{session_id}.jsonl"
    # Killed once the shell call is under way: the snapshot before it is recorded right before
    # it starts (after its tool_call_start event is logged).
    mark = log.parent / f"{session_id}.checkpoints" / "turns" / "2.json"
    for _ in range(600):
        if log.exists() and b'"echo started; sleep 60"' in log.read_bytes() and mark.exists() \
                and b'sleep 60"' in mark.read_bytes():
            break
        await asyncio.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        events = load_events(session_id)
    assert (ws / "a.txt").read_text() == "A\n"
    resumed, adapter, log_ = start(ws, [text_response("Recovered.")], resume=session_id)
    assert await resumed.submit("continue") == "Recovered."
    await resumed.close()
    log_.close()
    sent = adapter.requests[0].messages[1:]
    interrupted = [p.tool_result for m in sent for p in m.content if p.tool_result is not None][-1]
    assert interrupted is not None and interrupted.is_error and "interrupted" in str(interrupted.content)
    assert count_turns(events) == 2
    # The killed shell call was snapshotted before it started (issue 35): a rewind across it
    # works like any other, though the call never finished.
    assert rewind(session_id, 2).turn == 2
    assert rewind(session_id, 0).deleted == ("a.txt",)
    assert not (ws / "a.txt").exists()
