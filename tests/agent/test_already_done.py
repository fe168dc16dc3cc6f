"""Issue 20, stopping well: a repeated identical read or write is answered "already done",
keyed on the file's content hash; a loop ignored after two warnings ends the input."""

from __future__ import annotations

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.agent.guards.already_done import REPEATS_STOPPED, edit_already_made
from codeloop.agent.guards.loop_warning import LOOP_STOPPED
from codeloop.llm.adapters.scripted import text_response

from .agent_harness import calls

HELLO = 'print("hello")\n'


def outputs(h) -> list[str]:
    return [e.output or e.error or "" for e in h.of(ev.ToolCallEnd)]


async def test_an_identical_write_is_not_run_again_and_the_events_say_so(harness) -> None:
    write = ("write_file", {"file_path": "hello.py", "content": HELLO})
    h = harness("text", [calls("text", write), calls("text", write), text_response("Wrote hello.py.")])
    await h.session.submit("Create hello.py that prints hello")
    first, second = outputs(h)
    assert first.startswith("Wrote")
    assert second.startswith("already done: hello.py already holds this content; nothing was written.")
    # through the pipeline: announced like any call, and not an error
    assert [e.tool_name for e in h.of(ev.ToolCallStart)] == ["write_file", "write_file"]
    assert not h.of(ev.ToolCallEnd)[1].is_error
    assert "already done" in h.sent_texts(2)[-1]


async def test_a_different_write_runs(harness) -> None:
    h = harness("text", [calls("text", ("write_file", {"file_path": "a.py", "content": "x = 1\n"})),
                         calls("text", ("write_file", {"file_path": "a.py", "content": "x = 2\n"})),
                         text_response("ok")])
    await h.session.submit("set x")
    assert all(out.startswith("Wrote") for out in outputs(h))
    assert (h.root / "a.py").read_text() == "x = 2\n"


async def test_a_repeated_read_is_answered_until_the_file_changes(harness) -> None:
    read = ("read_file", {"file_path": "x.py"})
    h = harness("text", [calls("text", read), calls("text", read),
                         calls("text", ("shell", {"command": "sed -i s/1/9/ x.py"})),
                         calls("text", read), calls("text", read), text_response("done")])
    (h.root / "x.py").write_text("x = 1\nz = 3\n")
    await h.session.submit("look at the file")
    first, second, _, third, fourth = outputs(h)
    assert "  1 | x = 1" in first
    assert second.startswith("already done: you read lines 1-2 of x.py at step 1; it has not changed since.")
    assert "  1 | x = 9" in third  # changed since (same lines, other bytes): the read runs
    assert fourth.startswith("already done: you read lines 1-2 of x.py at step 4")


async def test_a_read_cut_to_fit_is_not_taken_as_seen(harness) -> None:
    read = ("read_file", {"file_path": "long.txt"})
    h = harness("text", [calls("text", read), calls("text", read), text_response("done")])
    (h.root / "long.txt").write_text("".join(f"line {i} " + "x" * 40 + "\n" for i in range(400)))
    await h.session.submit("look at the file")
    _, second = outputs(h)
    assert "Tool output was truncated" in h.sent_texts(1)[-1]
    assert not second.startswith("already done")  # it never saw the middle: no "use that text"


async def test_a_read_of_other_lines_runs(harness) -> None:
    h = harness("text", [calls("text", ("read_file", {"file_path": "x.py", "limit": 1})),
                         calls("text", ("read_file", {"file_path": "x.py"})),
                         calls("text", ("read_file", {"file_path": "x.py", "offset": 2, "limit": 1})),
                         text_response("done")])
    (h.root / "x.py").write_text("a = 1\nb = 2\n")
    await h.session.submit("look at the file")
    first, second, third = outputs(h)
    assert "a = 1" in first and "b = 2" not in first
    assert "b = 2" in second  # more lines than before: runs
    assert third.startswith("already done: you read lines 1-2 of x.py at step 2")  # inside what was shown


async def test_a_read_whose_result_was_shortened_to_fit_runs_again(harness) -> None:
    reads = [calls("text", ("read_file", {"file_path": f"f{i}.txt"})) for i in range(4)]
    h = harness("text", [*reads, reads[0], text_response("ok")])
    for i in range(4):
        (h.root / f"f{i}.txt").write_text(f"{i}" * 7_000 + "\n")
    await h.session.submit("read them " + "!" * 100)
    last = outputs(h)[-1]
    assert not last.startswith("already done") and last.count("0") >= 7_000


async def test_an_edit_made_once_is_answered_already_done(harness) -> None:
    edit = ("edit_file", {"file_path": "r.txt", "old_string": "a==1", "new_string": "a==1\nb==2"})
    h = harness("text", [calls("text", ("read_file", {"file_path": "r.txt"})), calls("text", edit),
                         calls("text", edit), text_response("ok")])
    (h.root / "r.txt").write_text("a==1\n")
    await h.session.submit("add b==2 to r.txt")
    assert outputs(h)[2].startswith("already done: r.txt already holds this change")
    assert (h.root / "r.txt").read_text() == "a==1\nb==2\n"


def test_edit_already_made_only_when_old_text_is_inside_the_new_one() -> None:
    assert edit_already_made("x = 2\n", "x = 1", "x = 2")
    assert not edit_already_made("x = 1\n", "x = 1", "x = 2")
    assert edit_already_made("a\nb\n", "a", "a\nb")
    assert not edit_already_made("a\nb\na\n", "a", "a\nb")  # one more "a" outside: the edit applies there
    assert not edit_already_made("a\n", "a", "")


async def test_cloud_profiles_run_repeated_calls_as_before(harness) -> None:
    write = ("write_file", {"file_path": "hello.py", "content": HELLO})
    h = harness("anthropic", [calls("anthropic", write), calls("anthropic", write), text_response("ok")])
    await h.session.submit("Create hello.py")
    assert all(out.startswith("Wrote") for out in outputs(h))


async def test_rescues_can_be_switched_off(harness) -> None:
    write = ("write_file", {"file_path": "hello.py", "content": HELLO})
    h = harness("text", [calls("text", write), calls("text", write), text_response("ok")],
                SessionConfig(small_model_rescues=False))
    await h.session.submit("Create hello.py")
    assert all(out.startswith("Wrote") for out in outputs(h))


def looping(profile: str, n: int) -> list:
    return [calls(profile, ("shell", {"command": "echo same"})) for _ in range(n)]


async def test_a_loop_ignored_after_two_warnings_ends_the_input_with_a_clear_reason(harness) -> None:
    h = harness("text", [*looping("text", 30), text_response("never reached")],
                SessionConfig(loop_detection_window=4))
    answer = await h.session.submit("do it")
    assert len(h.of(ev.LoopDetection)) == 2
    assert h.session.end_reason == "loop_limit" and h.of(ev.SessionEnd)[0].reason == "loop_limit"
    assert [w.message for w in h.of(ev.WarningEvent) if w.code == "loop_limit"] == [LOOP_STOPPED]
    assert len(h.adapter.requests) == 6  # warned after calls 4 and 5, stopped after 6
    assert answer == ("Stopped: the model repeated the same calls after two warnings. "
                      "What was done: ran `echo same` (exit 0).")
    assert h.of(ev.SessionEnd)[0].final_text == answer


async def test_a_cloud_profile_is_only_warned(harness) -> None:
    h = harness("anthropic", [*looping("anthropic", 8), text_response("gave up")],
                SessionConfig(loop_detection_window=4))
    assert await h.session.submit("do it") == "gave up"
    assert len(h.of(ev.LoopDetection)) == 5 and h.session.end_reason == "completed"


async def test_work_already_done_three_rounds_in_a_row_ends_the_input(harness) -> None:
    # Seen on HumanEval/1: the function written, the same file written again until the time ran out.
    write = ("write_file", {"file_path": "hello.py", "content": HELLO})
    h = harness("text", [calls("text", write)] * 5 + [text_response("never reached")])
    answer = await h.session.submit("Create hello.py that prints hello")
    assert len(h.adapter.requests) == 4  # written once, then three times "already done"
    assert h.session.end_reason == "loop_limit"
    assert [w.message for w in h.of(ev.WarningEvent) if w.code == "loop_limit"] == [REPEATS_STOPPED]
    assert answer == ("Stopped: the model repeated work already done, or the same failing call, three times in a row. "
                      "What was done: wrote hello.py.")
    assert (h.root / "hello.py").read_text() == HELLO


async def test_a_round_that_does_something_new_resets_the_count(harness) -> None:
    write = ("write_file", {"file_path": "hello.py", "content": HELLO})
    run = ("shell", {"command": "python3 hello.py"})
    h = harness("text", [calls("text", write), calls("text", write), calls("text", write), calls("text", run),
                         calls("text", write), calls("text", write), text_response("Done.")])
    assert await h.session.submit("Create hello.py that prints hello") == "Done."
    assert h.session.end_reason != "loop_limit"


async def test_the_same_failing_call_three_rounds_after_the_first_ends_the_input(harness) -> None:
    # Seen on HumanEval/33: job_output with arguments it does not take, five times in a row.
    bad = ("job_output", {"job_id": "job_id", "output": "None"})
    h = harness("text", [calls("text", bad)] * 6 + [text_response("never reached")])
    answer = await h.session.submit("Check the job")
    assert len(h.adapter.requests) == 4  # failed once, then the same failure three more times
    assert h.session.end_reason == "loop_limit" and answer.startswith("Stopped: the model repeated work already done")
