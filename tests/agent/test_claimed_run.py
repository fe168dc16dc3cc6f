"""Issue 20: a final answer saying a command ran when no command ran in this input has that
command run (seen with the 1.5B model: "I called the shell tool with the command
`rm -- obsolete.txt`", the file still there). Through the pipeline, once per input; small-model
sessions only."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.agent.guards.claimed_run import claimed_commands
from codeloop.llm.adapters.scripted import text_response
from codeloop.policy.model import Decision

from .agent_harness import calls

SEEN = "I called the shell tool with the command `rm -- obsolete.txt` to delete the file `obsolete.txt`."


def _setup(root) -> None:
    (root / "obsolete.txt").write_text("old data\n")
    (root / "keep.txt").write_text("keep me\n")


async def test_the_command_an_answer_says_ran_is_run_and_the_model_answers_after_it(harness) -> None:
    h = harness("text", [text_response(SEEN), text_response("Deleted obsolete.txt.")])
    _setup(h.root)
    assert await h.session.submit("Delete the file obsolete.txt. Leave keep.txt alone.") == "Deleted obsolete.txt."
    assert not (h.root / "obsolete.txt").exists() and (h.root / "keep.txt").read_text() == "keep me\n"
    (start,) = h.of(ev.ToolCallStart)
    assert (start.tool_name, start.arguments) == ("shell", {"command": "rm -- obsolete.txt"})
    assert [w.code for w in h.of(ev.WarningEvent)] == ["verify"]
    assert "`rm -- obsolete.txt` ran, and no such command ran" in h.of(ev.WarningEvent)[0].message


async def test_a_command_that_did_run_is_not_run_again(harness) -> None:
    h = harness("text", [calls("text", ("shell", {"command": "rm  --  obsolete.txt"})), text_response(SEEN)])
    _setup(h.root)
    assert await h.session.submit("Delete obsolete.txt.") == SEEN
    assert len(h.of(ev.ToolCallStart)) == 1 and not h.of(ev.WarningEvent)


async def test_only_once_per_input(harness) -> None:
    h = harness("text", [text_response("I ran `ls -la`."), text_response("I ran `ls -1` too.")],
                SessionConfig(check_claims=False))
    await h.session.submit("List the files.")
    assert [s.arguments["command"] for s in h.of(ev.ToolCallStart)] == ["ls -la"]


async def test_the_run_goes_through_the_policy(harness) -> None:
    async def deny_shell(call: Any, env: Any) -> Decision:
        return Decision.deny("no deleting here") if call.name == "shell" else Decision.allow()

    h = harness("text", [text_response(SEEN), text_response("I could not delete it.")])
    h.session.policy = deny_shell
    _setup(h.root)
    await h.session.submit("Delete the file obsolete.txt.")
    (end,) = h.of(ev.ToolCallEnd)
    assert end.is_error and "no deleting here" in (end.error or "") and (h.root / "obsolete.txt").exists()


async def test_a_cloud_session_takes_the_answer_as_it_is(harness) -> None:
    h = harness("anthropic", [text_response(SEEN)])
    _setup(h.root)
    assert await h.session.submit("Delete the file obsolete.txt.") == SEEN
    assert not h.of(ev.ToolCallStart) and (h.root / "obsolete.txt").exists()


def test_what_counts_as_a_command_said_to_have_run() -> None:
    assert claimed_commands(SEEN) == ["rm -- obsolete.txt"]
    assert claimed_commands("I have successfully run `python3  main.py`; it printed 3.") == ["python3 main.py"]
    assert claimed_commands("The file was removed by running `rm old.txt`.") == ["rm old.txt"]
    assert claimed_commands("`pytest -q` was executed and passed.") == ["pytest -q"]
    assert claimed_commands("I used `edit_file` on app.py.") == []  # a tool, not a program
    assert claimed_commands("I called `greet('Bob')`.") == []
    assert claimed_commands("You can run `python3 main.py` to see it.") == []  # advice, not a claim
    assert claimed_commands("I would run `rm x.txt`.") == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_answer_at_all_is_read_without_error(text: str) -> None:
    for command in claimed_commands(text):
        assert command and "`" not in command and "\n" not in command and command in " ".join(text.split())
