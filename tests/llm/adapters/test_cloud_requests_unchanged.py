"""Cloud profiles' requests stay byte for byte what they were before the small-model rescues
(issue 20): the rescues are for local / small-window profiles only.

A fixed scripted conversation that holds every condition a rescue reacts to (a tool named
like a file, a wish for a tool, empty optional arguments, an offset past the end of a file,
the tool list / a tool error / the system prompt echoed as the answer, an empty answer, a
file name followed by a fenced block) runs against a real loopback Anthropic Messages or
OpenAI Responses server. The bodies the session sends are compared with the ones recorded
in ``golden/`` from the code before the rescues existed (at the commit that added this
file): each body's SHA-256 after normalizing the workspace path, date and OS version, and
the last body in full (it holds the whole conversation). ``CODELOOP_RECORD_GOLDEN=1``
rewrites them; never do that to make a failing run pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from codeloop.agent.config import SessionConfig
from codeloop.agent.session import Session
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.adapters.anthropic import AnthropicAdapter
from codeloop.llm.adapters.openai import OpenAIAdapter
from codeloop.llm.client import Client
from codeloop.profiles import create_profile

from . import wire_anthropic as wa
from . import wire_openai_responses as wo
from .wire_loopback import LoopbackServer, Reply

GOLDEN = Path(__file__).parent / "golden"
STUB = 'from typing import List\n\n\ndef total(values: List[int]) -> int:\n    """Return the sum of values."""\n'
WHOLE = "solution.py\n```python\nfrom typing import List\n\n\ndef total(values: List[int]) -> int:\n    return sum(values)\n```"

Step = tuple[str, Any]
"""``("call", (name, arguments))`` or ``("text", reply text)``."""


def _inputs(profile_id: str, recovery: bool) -> list[tuple[str, list[Step]]]:
    profile = create_profile(profile_id)
    tool_list = profile.describe_tools(profile.tools())
    tool_error = f"Unknown tool 'solution.py'. Available tools: {', '.join(profile.tool_registry.names())}."
    inputs: list[tuple[str, list[Step]]] = [
        ("Implement total in solution.py, then run it.", [
            ("call", ("solution.py", {"content": "def total(values):\n    return sum(values)\n"})),
            ("call", ("solution", {})),
            ("call", ("rename_function", {"old_name": "total", "new_name": "sum_all"})),
            ("call", ("grep", {"pattern": "def", "path": "", "glob_filter": ""})),
            ("call", ("read_file", {"file_path": "solution.py", "offset": 0})),
            ("call", ("read_file", {"file_path": "solution.py", "offset": 100})),
            ("text", tool_list),
        ]),
        ("Go on.", [("text", WHOLE)]),
        ("Anything else?", [("text", "")]),
        ("Try again.", [("call", ("solution.py", {})), ("text", tool_error)]),
        ("Summarize.", [("text", profile.base_instructions[:600])]),
    ]
    tagged = '<tool name="solution.py">\n```python\ndef total(values):\n    return sum(values)\n```\n</tool>'
    if recovery:
        inputs.append(("Use the tools.", [
            ("text", tagged),
            ("text", '{"name": "solution", "arguments": {"offset": ""}}'),
            ("text", '{"name": "read_file", "arguments": {"file_path": "solution.py", "offset": 0, "limit": ""}}'),
            ("text", "Done."),
        ]))
    else:
        inputs.append(("Use the tools.", [("text", tagged)]))
    return inputs


def _reply(profile_id: str, step: Step, index: int) -> Reply:
    kind, value = step
    if profile_id == "anthropic":
        if kind == "call":
            name, args = value
            return wa.message_reply(wa.message([wa.tool_use(f"toolu_{index:02d}", name, args)], stop_reason="tool_use"))
        return wa.message_reply(wa.message([wa.text(value)] if value else []))
    if kind == "call":
        name, args = value
        return wo.response_reply(wo.response([wo.function_call(f"call_{index:02d}", name, json.dumps(args))]))
    return wo.response_reply(wo.response([wo.output_message(value)] if value else []))


def _normalized(body: bytes, root: Path) -> str:
    text = body.decode()
    for path in {str(root), os.path.realpath(root)}:
        text = text.replace(path, "<ROOT>")
    text = re.sub(r"Today's date: \d{4}-\d{2}-\d{2}", "Today's date: <DATE>", text)
    text = re.sub(r"OS version: [^\"\\]*", "OS version: <OS>", text)
    return re.sub(r"call_[0-9a-f]{16}", "call_<ID>", text)


@pytest.mark.parametrize(("profile_id", "recovery"), [("anthropic", False), ("anthropic", True), ("openai", False)])
async def test_cloud_profile_requests_are_byte_identical(
    wire: LoopbackServer, tmp_path: Path, profile_id: str, recovery: bool,
) -> None:
    (tmp_path / "solution.py").write_text(STUB)
    (tmp_path / "notes.txt").write_text("a\nb\n")
    inputs = _inputs(profile_id, recovery)
    steps = [step for _, script in inputs for step in script]
    wire.push(*(_reply(profile_id, step, i) for i, step in enumerate(steps)))
    adapter = (AnthropicAdapter(api_key="k", base_url=wire.base_url, timeout=10) if profile_id == "anthropic"
               else OpenAIAdapter(api_key="k", base_url=f"{wire.base_url}/v1", timeout=10))
    client = Client({profile_id: adapter})
    config = SessionConfig(stream=False, max_retries=0, tool_call_recovery=recovery)
    session = Session(create_profile(profile_id), LocalExecutionEnvironment(str(tmp_path)), config, client)
    for text, _ in inputs:
        await session.submit(text)
        assert session.end_reason == "completed", session.error
    await session.close()
    await client.close()

    assert len(wire.requests) == len(steps)
    bodies = [_normalized(r.body, tmp_path) for r in wire.requests]
    sent = {"sha256": [hashlib.sha256(b.encode()).hexdigest() for b in bodies], "last_request": json.loads(bodies[-1])}
    golden = GOLDEN / f"{profile_id}{'-recovery' if recovery else ''}.json"
    if os.environ.get("CODELOOP_RECORD_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps(sent, indent=1) + "\n")
    recorded = json.loads(golden.read_text())
    assert sent["last_request"] == recorded["last_request"], "the whole conversation differs from the recorded one"
    for index, (now, before) in enumerate(zip(sent["sha256"], recorded["sha256"], strict=True)):
        assert now == before, f"request {index} differs from the one recorded before the rescues:\n{bodies[index]}"
    assert (tmp_path / "solution.py").read_text() == STUB, "a cloud session must not write from a fenced block"
