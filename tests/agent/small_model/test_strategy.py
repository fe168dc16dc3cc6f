"""The small-model strategy in a Session (issue 33): a scripted model (the ScriptedAdapter, a
real ProviderAdapter) over a real workspace; checks run in the scratch copy (real bubblewrap).

Each reply of the script is in the reply format; the assertions are on what the user sees:
the files, the events, the answer (codeloop's report), and the requests sent."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.agent.session import Session
from codeloop.agent.small_model.reply_format import GRAMMAR
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.environments.sandbox import find_bwrap, probe_bwrap
from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response, tool_call_response
from codeloop.llm.client import Client
from codeloop.llm.types import Request
from codeloop.profiles import create_profile

SANDBOX = find_bwrap() is not None and probe_bwrap() is None
needs_sandbox = pytest.mark.skipif(not SANDBOX, reason="bubblewrap cannot run a sandbox here: checks that run code are skipped")

STATS = "def last_n(xs, n):\n    return xs[-n - 1:]\n"
TEST = "from stats import last_n\n\nassert last_n([1, 2, 3, 4, 5], 2) == [4, 5]\nprint('ok')\n"
BAD_FIX = "FILE stats.py\n<<<<<<< SEARCH\n    return xs[-n - 1:]\n=======\n    return xs[n:]\n>>>>>>> REPLACE\n"
GOOD_FIX = "FILE stats.py\n<<<<<<< SEARCH\n    return xs[-n - 1:]\n=======\n    return xs[-n:]\n>>>>>>> REPLACE\n"


class Run:
    def __init__(self, root: Path, script: list[Any], *, profile: str = "text", strategy: bool = True,
                 samples: int = 2) -> None:
        self.root = root
        self.adapter = ScriptedAdapter(script)
        self.session = Session(create_profile(profile), LocalExecutionEnvironment(str(root)),
                               SessionConfig(small_model_strategy=strategy, small_model_samples=samples),
                               Client({"scripted": self.adapter}))
        self.events: list[ev.SessionEvent] = []
        self.session.subscribe(self.events.append)

    def said(self) -> list[str]:
        return [e.message for e in self.events if isinstance(e, ev.WarningEvent) and e.code == "small_model"]

    def options(self, index: int) -> dict[str, Any]:
        options = self.adapter.requests[index].provider_options or {}
        return dict(options.get("openai_compatible", {}))


def project(root: Path) -> None:
    (root / "stats.py").write_text(STATS)
    (root / "test_stats.py").write_text(TEST)


async def test_hello_is_written_through_the_pipeline_in_two_model_calls_and_the_answer_is_codeloops(tmp_path: Path) -> None:
    run = Run(tmp_path, [text_response('FILE hello.py\n```python\nprint("Hello")\n```\n'), text_response("DONE\nI did it")])
    answer = await run.session.submit("Create hello.py that prints Hello")
    assert (tmp_path / "hello.py").read_text() == 'print("Hello")\n'
    assert len(run.adapter.requests) == 2
    assert answer.startswith("Changed hello.py.")
    assert "I did it" not in answer  # the model's prose is not the answer
    starts = [e for e in run.events if isinstance(e, ev.ToolCallStart)]
    assert [(e.tool_name, e.arguments["file_path"]) for e in starts] == [("write_file", "hello.py")]
    first = run.adapter.requests[0]
    assert run.options(0) == {"grammar": GRAMMAR}  # greedy: the grammar, no seed
    assert first.temperature == 0.0 and first.tools is None
    assert "parse hello.py" in "\n".join(run.said())
    end = [e for e in run.events if isinstance(e, ev.SessionEnd)][-1]
    assert end.reason == "completed" and end.final_text == answer


@needs_sandbox
async def test_a_greedy_draft_failing_the_workspace_test_brings_seeded_samples_and_the_passing_one_is_written(tmp_path: Path) -> None:
    project(tmp_path)
    run = Run(tmp_path, [text_response(BAD_FIX), text_response(BAD_FIX), text_response(GOOD_FIX), text_response("DONE")])
    answer = await run.session.submit("last_n in stats.py returns one element too many")
    assert (tmp_path / "stats.py").read_text() == "def last_n(xs, n):\n    return xs[-n:]\n"
    assert [run.options(i).get("seed") for i in range(3)] == [None, 1, 2]
    assert run.adapter.requests[1].temperature == pytest.approx(0.7)
    said = "\n".join(run.said())
    assert "draft 1: 1 of" in said and "tests test_stats.py" in said
    assert "chose draft 3 of 3" in said
    assert "Checks passed:" in answer and "tests test_stats.py" in answer
    assert not list(tmp_path.glob("__pycache__/*"))  # checks ran in the scratch copy, not here


@needs_sandbox
async def test_the_repair_round_shows_only_the_failing_checks_output(tmp_path: Path) -> None:
    project(tmp_path)
    run = Run(tmp_path, [text_response(BAD_FIX), text_response(GOOD_FIX), text_response("DONE")], samples=0)
    await run.session.submit("fix last_n in stats.py")
    assert (tmp_path / "stats.py").read_text().endswith("return xs[-n:]\n")
    repair = run.adapter.requests[1].messages
    assert repair[-2].text == BAD_FIX
    assert repair[-1].text.startswith("This did not work:\ntests test_stats.py:")
    assert "AssertionError" in repair[-1].text


async def test_a_reply_outside_the_format_writes_nothing_and_the_model_is_told_where(tmp_path: Path) -> None:
    run = Run(tmp_path, [text_response("Sure! Here is the file"), text_response("Sure"), text_response("DONE")],
              samples=0)
    answer = await run.session.submit("Create a.py")
    assert list(tmp_path.iterdir()) == []
    repair = run.adapter.requests[1].messages[-1].text
    assert repair.startswith("This did not work:\nthe reply is not in the format (line 1: a reply starts with FILE")
    told = run.adapter.requests[2].messages[-1].text
    assert told.startswith("That reply could not be used: the reply is not in the format (line 1:")
    assert answer == "Nothing was changed and nothing ran."
    assert [e.reason for e in run.events if isinstance(e, ev.SessionEnd)] == ["completed"]


async def test_a_run_line_runs_through_the_pipeline_and_its_output_goes_back(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("42\n")
    run = Run(tmp_path, [text_response("RUN cat data.txt\n"), text_response("DONE")])
    answer = await run.session.submit("What is in data.txt?")
    assert "42" in run.adapter.requests[1].messages[-1].text
    assert answer == "Ran `cat data.txt`: exit 0."
    assert run.session.strategy_ran == ["cat data.txt"]


async def test_a_delete_line_removes_the_file_through_the_pipeline_and_the_report_says_so(tmp_path: Path) -> None:
    (tmp_path / "obsolete.txt").write_text("old\n")
    (tmp_path / "keep.txt").write_text("keep\n")
    run = Run(tmp_path, [text_response("DELETE obsolete.txt\n"), text_response("DONE")])
    answer = await run.session.submit("Remove obsolete.txt")
    assert not (tmp_path / "obsolete.txt").exists() and (tmp_path / "keep.txt").read_text() == "keep\n"
    starts = [e for e in run.events if isinstance(e, ev.ToolCallStart)]
    assert [e.tool_name for e in starts] == ["apply_patch"]  # the pipeline's own way to remove a file
    assert answer == "Deleted obsolete.txt."


@needs_sandbox
async def test_deleting_a_module_a_script_imports_fails_the_import_check_and_the_scripts_run(tmp_path: Path) -> None:
    (tmp_path / "util.py").write_text("def helper():\n    return 1\n")
    (tmp_path / "main.py").write_text("from util import helper\n\nprint(helper())\n")
    run = Run(tmp_path, [text_response("DELETE util.py\n")] * 4 + [text_response("DONE")], samples=2)
    answer = await run.session.submit("Tidy up util.py")
    said = "\n".join(run.said())
    # main.py ran cleanly before the change (run in the scratch copy): it is checked after it too.
    assert "draft 1: 2 of 2 checks failed (project imports resolve, still runs: main.py)" in said, said
    assert "draft 2: 2 of 2 checks failed" in said and "repair round" in said
    # No candidate passed: the best is applied all the same (doing nothing never wins), and the
    # report names the failed check for the user.
    assert "Checks failed: project imports resolve, still runs: main.py." in answer


@pytest.mark.parametrize("answer", ["allow", "deny"])
async def test_without_a_sandbox_checks_that_run_code_are_asked_through_the_sessions_policy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    from codeloop.policy.model import Decision

    # No sandbox can run (as on a machine without bubblewrap): the probe says why.
    monkeypatch.setattr("codeloop.environments.sandbox.probe_bwrap", lambda *args, **kwargs: "bwrap is not installed")
    project(tmp_path)
    asked: list[str] = []

    async def policy(call: Any, env: Any) -> Decision:
        if call.name != "shell":
            return Decision.allow()
        asked.append(call.arguments["command"])
        return Decision.allow() if answer == "allow" else Decision.deny("the user said no")

    run = Run(tmp_path, [text_response(GOOD_FIX), text_response("DONE")])
    run.session.policy = policy
    await run.session.submit("fix last_n in stats.py")
    said = "\n".join(run.said())
    assert asked == ["python3 test_stats.py"]  # the test check, asked like any command
    if answer == "allow":
        assert "draft 1: 3 checks passed (parse stats.py, project imports resolve, tests test_stats.py)" in said, said
        assert (tmp_path / "stats.py").read_text() != STATS
    else:  # a check the user refused did not pass
        assert "draft 1: 1 of 3 checks failed (tests test_stats.py)" in said, said


async def test_without_a_sandbox_or_a_policy_only_the_checks_read_here_count(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("codeloop.environments.sandbox.probe_bwrap", lambda *args, **kwargs: "bwrap is not installed")
    project(tmp_path)
    run = Run(tmp_path, [text_response(GOOD_FIX), text_response("DONE")])
    await run.session.submit("fix last_n in stats.py")
    assert "draft 1: 2 checks passed (parse stats.py, project imports resolve)" in "\n".join(run.said())


async def test_drafts_stream_as_progress_notes_never_as_text(tmp_path: Path) -> None:
    body = "".join(f"LINE_{i} = {i}\n" for i in range(60))  # about 700 characters
    run = Run(tmp_path, [text_response(f"FILE big.py\n```python\n{body}```\n"), text_response("DONE")])
    await run.session.submit("Create big.py")
    assert (tmp_path / "big.py").read_text() == body
    progress = [e.message for e in run.events if isinstance(e, ev.WarningEvent) and e.code == "small_model_progress"]
    assert progress and progress[-1].startswith("drafting: ") and progress[-1].endswith(" characters so far")
    # The draft's text is never shown as it comes: most drafts are not written.
    assert not [e for e in run.events if isinstance(e, ev.AssistantTextDelta)]


@needs_sandbox
async def test_deleting_the_code_and_its_test_fails_the_tests_that_ran_so_more_candidates_are_drafted(tmp_path: Path) -> None:
    project(tmp_path)
    run = Run(tmp_path, [text_response("DELETE stats.py\nDELETE test_stats.py\n"), text_response(GOOD_FIX),
                         text_response("DONE"), text_response("DONE")])
    await run.session.submit("fix last_n in stats.py")
    said = "\n".join(run.said())
    assert "draft 1: 1 of 1 checks failed (tests test_stats.py)" in said, said
    assert "chose draft 2 of 3" in said
    assert (tmp_path / "test_stats.py").exists() and "xs[-n:]" in (tmp_path / "stats.py").read_text()


async def test_a_denied_delete_is_reported_and_the_file_stays(tmp_path: Path) -> None:
    from codeloop.policy.model import Decision

    async def deny(call: Any, env: Any) -> Decision:
        return Decision.deny("not today")

    (tmp_path / "old.txt").write_text("old\n")
    run = Run(tmp_path, [text_response("DELETE old.txt\n")])
    run.session.policy = deny
    answer = await run.session.submit("Remove old.txt")
    assert (tmp_path / "old.txt").read_text() == "old\n"
    assert "Deleting old.txt failed" in answer and "not today" in answer and "Deleted" not in answer


async def test_a_denied_write_is_reported_and_nothing_is_written(tmp_path: Path) -> None:
    from codeloop.policy.model import Decision

    async def deny(call: Any, env: Any) -> Decision:
        return Decision.deny("not today")

    run = Run(tmp_path, [text_response("FILE a.py\n```\nx = 1\n```\n")])
    run.session.policy = deny
    answer = await run.session.submit("Create a.py")
    assert not (tmp_path / "a.py").exists()
    assert "Writing a.py failed" in answer and "not today" in answer


async def test_steering_reaches_the_next_draft(tmp_path: Path) -> None:
    run = Run(tmp_path, [text_response("FILE a.py\n```\nx = 1\n```\n"), text_response("DONE")])
    run.session.steer("use tabs")
    await run.session.submit("Create a.py")
    assert run.adapter.requests[0].messages[-1].text == "A note from the user: use tabs"
    assert [e.content for e in run.events if isinstance(e, ev.SteeringInjected)] == ["use tabs"]


def _wire(request: Request) -> str:
    """The request as the adapter receives it, every field (the adapter's body is built from these alone)."""
    return json.dumps(dataclasses.asdict(request), sort_keys=True, default=str)


@pytest.mark.parametrize("profile", ["openai", "anthropic", "gemini"])
async def test_cloud_profiles_never_reach_the_strategy_their_requests_are_byte_identical(tmp_path: Path, profile: str) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    script = [tool_call_response(("read_file", {"file_path": "a.txt"})), text_response("done")]
    with_strategy = Run(tmp_path, list(script), profile=profile, strategy=True)
    without = Run(tmp_path, list(script), profile=profile, strategy=False)
    for run in (with_strategy, without):
        run.session.id = "fixed"
        await run.session.submit("do it")
    assert len(with_strategy.adapter.requests) == len(without.adapter.requests) == 2
    for a, b in zip(with_strategy.adapter.requests, without.adapter.requests, strict=True):
        assert _wire(a) == _wire(b)
    assert not with_strategy.said()


@needs_sandbox
async def test_a_reworded_task_gets_the_same_context_checks_and_commands(tmp_path: Path) -> None:
    """No decision from wording: two phrasings naming the same files, under the same scripted
    model, send the same files, run the same checks and make the same calls."""
    seen = []
    for n, task in enumerate(["In stats.py, last_n returns one item too many; test_stats.py shows it.",
                              "test_stats.py fails: please repair the slicing in stats.py"]):
        root = tmp_path / str(n)
        root.mkdir()
        project(root)
        run = Run(root, [text_response(GOOD_FIX), text_response("DONE")])
        await run.session.submit(task)
        first = run.adapter.requests[0].messages[1].text
        context = first[:first.index("# Task\n")]
        calls = [(e.tool_name, dict(e.arguments)) for e in run.events if isinstance(e, ev.ToolCallStart)]
        seen.append((context, run.said(), calls))
    assert seen[0] == seen[1]
    context, said, _calls = seen[0]
    assert "FILE stats.py\n```\n" + STATS in context and "FILE test_stats.py" in context
    assert said[1] == "draft 1: 3 checks passed (parse stats.py, project imports resolve, tests test_stats.py)"


async def test_a_reply_cut_off_after_complete_file_blocks_keeps_those_blocks(tmp_path: Path) -> None:
    block = 'FILE hello.py\n```python\nprint("hello")\n```\n'
    run = Run(tmp_path, [text_response(block * 3 + "FILE hello.py\n```python\nprint(\"he"), text_response("DONE")])
    answer = await run.session.submit("Create hello.py that prints hello")
    assert (tmp_path / "hello.py").read_text() == 'print("hello")\n'
    assert answer.startswith("Changed hello.py.")
    assert len(run.adapter.requests) == 2


@given(st.text(alphabet="FILE a.py\n`<=>SEARCHREPLACx", max_size=200))
def test_complete_blocks_of_any_text_are_a_prefix_that_parses_or_none(text: str) -> None:
    from codeloop.agent.small_model.reply_format import complete_blocks, parse_reply, render_reply

    found = complete_blocks(text)
    if found is not None:
        assert parse_reply(render_reply(found)) == found
        assert all(block.path in text for block in found.files)


async def test_max_turns_counts_each_draft_as_a_turn_and_stops_the_strategy(tmp_path: Path) -> None:
    project(tmp_path)
    run = Run(tmp_path, [text_response(BAD_FIX)] * 5 + [text_response(GOOD_FIX)])
    # The input is turn 1; drafts 1 and 2 are turns 2 and 3; the third draft would be turn 4.
    run.session.config = dataclasses.replace(run.session.config, max_turns=3)
    answer = await run.session.submit("fix last_n in stats.py")
    assert len(run.adapter.requests) == 2
    assert (tmp_path / "stats.py").read_text() == STATS  # stopped while choosing: nothing written
    assert answer.endswith("Stopped: the turn limit of the session was reached.")
    assert [e.reason for e in run.events if isinstance(e, ev.SessionEnd)] == ["turn_limit"]
    assert [e.total_turns for e in run.events if isinstance(e, ev.TurnLimit)] == [3]


async def test_the_model_call_limit_of_an_input_stops_the_samples_and_says_so(tmp_path: Path) -> None:
    project(tmp_path)
    run = Run(tmp_path, [text_response(BAD_FIX), text_response(GOOD_FIX)])
    run.session.config = dataclasses.replace(run.session.config, max_model_calls_per_input=1)
    answer = await run.session.submit("fix last_n in stats.py")
    assert len(run.adapter.requests) == 1
    assert (tmp_path / "stats.py").read_text() == STATS
    assert answer.endswith("Stopped: the model-call limit of this input was reached.")
    assert [e.reason for e in run.events if isinstance(e, ev.SessionEnd)] == ["round_limit"]
    assert len([e for e in run.events if isinstance(e, ev.TurnLimit)]) == 1


async def test_a_draft_asks_for_room_to_rewrite_the_files_shown_not_the_profiles_whole_limit(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("x = 1\n" * 1000)
    run = Run(tmp_path, [text_response("DONE"), text_response("DONE")])
    await run.session.submit("Create hello.py")
    await run.session.submit("Look at big.py")
    small, large = (r.max_tokens for r in run.adapter.requests)
    assert small == 768
    assert large == min(6000 // 3 + 256, run.session.profile.max_output_tokens or 10**9)


async def test_blocks_repeating_the_formats_examples_are_no_change_of_the_models(tmp_path: Path) -> None:
    from codeloop.agent.small_model.reply_format import REPLY_FORMAT_PROMPT

    (tmp_path / "config.py").write_text("MAX_RETRIES = 3\n")
    examples = REPLY_FORMAT_PROMPT[REPLY_FORMAT_PROMPT.index("FILE geometry/circle.py"):]
    examples = examples.replace("   or SEARCH/REPLACE hunks, each copying lines of the file exactly and giving their new text:\n", "")
    examples = examples[:examples.index("2. One command")]
    change = "FILE config.py\n<<<<<<< SEARCH\nMAX_RETRIES = 3\n=======\nMAX_RETRIES = 5\n>>>>>>> REPLACE\n"
    run = Run(tmp_path, [text_response(change + examples), text_response(examples), text_response(examples),
                         text_response("DONE")], samples=0)
    answer = await run.session.submit("In config.py, change MAX_RETRIES from 3 to 5")
    assert (tmp_path / "config.py").read_text() == "MAX_RETRIES = 5\n"
    assert not (tmp_path / "geometry").exists()
    assert answer.startswith("Changed config.py.")
    told = run.adapter.requests[3].messages[-1].text
    assert told.startswith("That reply could not be used: the reply only repeats the examples of the reply format")


async def test_the_formats_example_written_under_the_tasks_own_path_is_no_change_either(tmp_path: Path) -> None:
    from codeloop.agent.small_model.reply_format import REPLY_FORMAT_PROMPT

    (tmp_path / "durations.py").write_text("def parse_duration(text):\n    return 0\n")
    start = REPLY_FORMAT_PROMPT.index("```python\n")
    example = REPLY_FORMAT_PROMPT[start:REPLY_FORMAT_PROMPT.index("```\n", start + 3) + 4]
    run = Run(tmp_path, [text_response("FILE durations.py\n" + example), text_response("DONE")], samples=0)
    await run.session.submit("Fix parse_duration in durations.py")
    assert (tmp_path / "durations.py").read_text() == "def parse_duration(text):\n    return 0\n"
    assert "the reply only repeats the examples of the reply format" in run.adapter.requests[1].messages[-1].text


async def test_a_greedy_draft_repeating_an_earlier_reply_is_replaced_by_a_seeded_sample(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text('{"port": 3000}\n')
    fix = 'FILE settings.json\n<<<<<<< SEARCH\n{"port": 3000}\n=======\n{"port": 8080}\n>>>>>>> REPLACE\n'
    run = Run(tmp_path, [text_response("RUN cat settings.json\n"), text_response("RUN cat settings.json\n"),
                         text_response(fix), text_response("DONE")])
    await run.session.submit('In settings.json, set "port" to 8080')
    assert (tmp_path / "settings.json").read_text() == '{"port": 8080}\n'
    assert [run.options(i).get("seed") for i in range(4)] == [None, None, 201, None]
    assert run.adapter.requests[2].temperature == pytest.approx(0.7)
    assert "the draft repeats an earlier reply: drafting with a seed (1 of 2)" in run.said()
    assert run.session.strategy_ran == ["cat settings.json"]  # the repeated command did not run again
