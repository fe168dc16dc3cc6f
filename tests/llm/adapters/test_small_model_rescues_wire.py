"""The small-model rescues (issue 20) over the wire: the ``text`` profile against a loopback
OpenAI-compatible server (as `codeloop run` talks to llama.cpp), the way the issue's
failures happened: a tool named after the file, the tool list echoed, then the answer."""

from __future__ import annotations

from pathlib import Path

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.agent.session import Session
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.client import Client
from codeloop.profiles import create_profile

from .wire_chat_completions import completion
from .wire_loopback import LoopbackServer, json_reply

STUB = 'from typing import List\n\n\ndef total(values: List[int]) -> int:\n    """Return the sum of values."""\n'


async def test_a_text_session_edits_through_a_misnamed_call_and_is_sent_back_from_an_echo(
    wire: LoopbackServer, tmp_path: Path,
) -> None:
    (tmp_path / "solution.py").write_text(STUB)
    profile = create_profile("text")
    tool_list = profile.describe_tools(profile.tools())
    wire.push(
        json_reply(completion('<tool name="solution">\n```python\ndef total(values: List[int]) -> int:\n'
                              '    return sum(values)\n```\n')),
        json_reply(completion(tool_list)),
        json_reply(completion('<tool name="grep">\n<pattern>return</pattern>\n<glob_filter></glob_filter>\n'
                              '<path></path>\n')),
        json_reply(completion("I implemented total in solution.py; it returns sum(values).")),
    )
    client = Client({"openai_compatible": OpenAICompatibleAdapter(f"{wire.base_url}/v1")})
    session = Session(profile, LocalExecutionEnvironment(str(tmp_path)), SessionConfig(stream=False), client)
    events: list[ev.SessionEvent] = []
    session.subscribe(events.append)
    answer = await session.submit("Fill in solution.py.")
    await session.close()
    await client.close()

    assert answer == "I implemented total in solution.py; it returns sum(values)."
    assert (tmp_path / "solution.py").read_text() == STUB.replace('"""Return the sum of values."""', "return sum(values)")
    ends = [e for e in events if isinstance(e, ev.ToolCallEnd)]
    assert [(e.tool_name, e.is_error) for e in ends] == [("edit_file", False), ("grep", False)]
    assert "solution.py:5:    return sum(values)" in (ends[1].output or "")
    bodies = [r.json() for r in wire.requests]
    assert bodies[2]["messages"][-1]["content"].startswith("Your reply repeated the tool list; that is not an answer.")
    assert '<tool_result name="edit_file" status="ok">' in bodies[1]["messages"][-1]["content"]
