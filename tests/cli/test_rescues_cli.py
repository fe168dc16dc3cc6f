"""Issue 20's turn-level rescues, black box: the real ``codeloop run`` (local default: the
``text`` profile) against the loopback scripted model; and a cloud profile's requests, byte
for byte, with the rescues' guards in and without them."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from chat_server import ChatServer, text_reply, tool_reply
from test_run_cli import run

from codeloop.agent.config import SessionConfig
from codeloop.agent.guards import DEFAULT_GUARDS
from codeloop.agent.guards.empty_reply import EmptyReplyNudge
from codeloop.agent.guards.loop_warning import LoopWarning
from codeloop.agent.session import Session
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.adapters.openai_compatible import OpenAICompatibleAdapter
from codeloop.llm.client import Client
from codeloop.profiles import create_profile

TASK = "Create hello.py that prints hello, then run it"
WRITE = '<tool name="write_file">\n<file_path>hello.py</file_path>\n<content>\nprint("hello")\n</content>\n</tool>'


def events(done) -> list[dict]:
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_an_echoed_final_answer_is_reported_as_what_was_done(server, tmp_path) -> None:
    server.replies.extend([
        text_reply(WRITE),
        text_reply('<tool name="shell">\n<command>python3 hello.py</command>\n</tool>'),
        *[text_reply("# Available tools\n## read_file: Read a file from the filesystem.\n"
                     "## write_file: Write content to a file.")] * 3,  # corrected twice, then reported
    ])
    done = run([TASK, "--base-url", server.base_url, "--approval", "never-ask", "--sandbox", "off"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert ("No final answer from the model (its last reply was empty or repeated its instructions). "
            "What was done: wrote hello.py; ran `python3 hello.py` (exit 0).") in done.stdout
    server.replies.extend([text_reply("<tool name=\"shell\">\n<command>true</command>\n</tool>"),
                           *[text_reply("")] * 3])  # two empty replies are nudged, the third stays
    quiet = run(["Run true", "--quiet", "--base-url", server.base_url, "--approval", "never-ask", "--sandbox",
                 "off"], tmp_path)
    assert quiet.stdout == ("No final answer from the model (its last reply was empty or repeated its "
                            "instructions). What was done: ran `true` (exit 0).\n")


def test_the_file_a_task_names_is_in_the_first_request(server, tmp_path) -> None:
    (tmp_path / "stats.py").write_text("def mean(xs):\n    return sum(xs) / (len(xs) - 1)\n")
    server.replies.append(text_reply("It divides by len(xs) - 1."))
    done = run(["What is wrong in stats.py?", "--json", "--base-url", server.base_url, "--approval", "never-ask",
                "--sandbox", "off"], tmp_path)
    assert done.returncode == 0, done.stderr
    first = server.requests[0]["messages"][1]["content"]
    assert "## stats.py\n  1 | def mean(xs):\n  2 |     return sum(xs) / (len(xs) - 1)" in first
    assert first.endswith("What is wrong in stats.py?")


def test_no_rescues_turns_them_off_from_the_flag_or_the_config(server, tmp_path) -> None:
    """``--no-rescues`` (and ``rescues = false``) give the session before issue 20: the named
    file is not put in front of the model, so the first message is the task alone."""
    (tmp_path / "stats.py").write_text("def mean(xs):\n    return sum(xs) / (len(xs) - 1)\n")
    server.replies.extend([text_reply("It divides by len(xs) - 1.")] * 2)
    args = ["What is wrong in stats.py?", "--json", "--base-url", server.base_url, "--approval", "never-ask",
            "--sandbox", "off"]
    done = run([*args, "--no-rescues"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.requests[0]["messages"][1]["content"] == "What is wrong in stats.py?"
    (tmp_path / ".codeloop").mkdir()
    (tmp_path / ".codeloop" / "config.toml").write_text("rescues = false\n")
    done = run(args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.requests[1]["messages"][1]["content"] == "What is wrong in stats.py?"
    (tmp_path / ".codeloop" / "config.toml").write_text('rescues = "no"\n')
    bad = run(args, tmp_path)
    assert bad.returncode == 2 and "rescues must be true or false, e.g. rescues = false" in bad.stderr


# -- a cloud profile's requests are what they were ----------------------------------------

BEFORE = (EmptyReplyNudge, LoopWarning)
"""The guards before issue 20's rescues (less the claim check, which issue 33 removed)."""


def conversation(profile_id: str) -> list[dict]:
    """Every rescue's trigger: a repeated write and read, a named file, a loop, no run, an empty reply."""
    if profile_id == "text":
        def call(name: str, args: dict, _id: str) -> dict:
            return text_reply(f'<tool name="{name}">' + "".join(f"<{k}>{v}</{k}>" for k, v in args.items())
                              + "</tool>")
    else:
        call = tool_reply
    write = ("write_file", {"file_path": "hello.py", "content": 'print("hello")\n'})
    read = ("read_file", {"file_path": "stats.py"})
    same = ("glob", {"pattern": "*.md"})  # (a shell call's result holds its duration: not the same twice)
    steps = [write, write, read, read, same, same, same, same, same]
    return [*(call(*step, f"call_{i}") for i, step in enumerate(steps)), text_reply(""), text_reply("Done.")]


def bodies(profile_id: str, root: Path, guards: tuple) -> list[bytes]:
    """The request bodies a session sends for :func:`conversation`, byte for byte."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    (root / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    with ChatServer() as server:
        server.replies.extend(conversation(profile_id))
        client = Client({"openai_compatible": OpenAICompatibleAdapter(server.base_url)})
        session = Session(create_profile(profile_id), LocalExecutionEnvironment(str(root)),
                          SessionConfig(loop_detection_window=3, max_retries=0), client, guards=guards)

        async def go() -> None:
            await session.submit(f"{TASK}. See stats.py.")
            await session.close()
            await client.close()

        asyncio.run(go())
        return server.raw_requests


def test_a_cloud_profile_sends_the_same_bytes_with_the_rescues_in(tmp_path) -> None:
    root = tmp_path / "ws"
    for profile_id in ("openai", "anthropic"):
        with_rescues = bodies(profile_id, root, DEFAULT_GUARDS)
        assert with_rescues == bodies(profile_id, root, BEFORE)
        assert len(with_rescues) == 11  # every call ran, the empty reply was nudged, nothing stopped
    # the same conversation in the local profile is changed by them (the comparison can tell)
    assert bodies("text", root, DEFAULT_GUARDS) != bodies("text", root, BEFORE)
