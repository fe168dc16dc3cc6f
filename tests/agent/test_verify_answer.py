"""Issue 20, verify before answering: a command the task names is run before the final answer
(the model is nudged once with the exact call, then codeloop makes it); otherwise written Python must compile. And
the answer of an input whose final text is empty or an echo is what its calls did."""

from __future__ import annotations

import pytest

from codeloop.agent import events as ev
from codeloop.agent.guards.echo_reply import echoed
from codeloop.agent.guards.verify_answer import RunRequest, run_request
from codeloop.agent.guards.work_report import NO_ANSWER
from codeloop.llm.adapters.scripted import text_response

from .agent_harness import calls

HELLO = ("write_file", {"file_path": "hello.py", "content": 'print("hello")\n'})
RUN_HELLO = ("shell", {"command": "python3 hello.py"})


def nudges(h) -> list[str]:
    return [e.content for e in h.of(ev.SteeringInjected)]


async def test_run_it_gets_the_exact_call_once_then_the_answer_is_taken(harness) -> None:
    h = harness("text", [calls("text", HELLO), text_response("Created hello.py."), calls("text", RUN_HELLO),
                         text_response("hello.py prints hello.")])
    answer = await h.session.submit("Create hello.py that prints hello, then run it")
    assert nudges(h) == ["Before you finish: the task asks to run `python3 hello.py`, and nothing was run since "
                         'your last change. Run it now, then give your final answer:\n<tool name="shell">\n'
                         "<command>python3 hello.py</command>\n</tool>"]
    assert h.of(ev.ToolCallEnd)[-1].output.startswith("hello")
    assert answer == "hello.py prints hello."


async def test_a_nudge_ignored_has_codeloop_make_the_call_and_the_model_answers_after_its_output(harness) -> None:
    # Seen with the 1.5B model: nudged once, it answered "I ran it ... it printed Hello" unrun.
    h = harness("text", [calls("text", HELLO), text_response("Created."), text_response("I ran it: hello."),
                         text_response("It printed hello.")])
    assert await h.session.submit("Create hello.py that prints hello, then run it") == "It printed hello."
    assert len(nudges(h)) == 1
    ran = h.of(ev.ToolCallEnd)[-1]
    assert ran.tool_name == "shell" and (ran.output or "").startswith("hello")
    assert [w.code for w in h.of(ev.WarningEvent)] == ["verify"]
    last = h.adapter.requests[-1].messages
    assert "I ran it: hello." in last[-2].text and "hello" in last[-1].text  # its claim, then the real output
    assert (h.root / "hello.py").exists() and len(h.adapter.requests) == 4


async def test_a_command_run_after_the_last_write_needs_no_nudge(harness) -> None:
    h = harness("text", [calls("text", HELLO), calls("text", RUN_HELLO), text_response("Done.")])
    await h.session.submit("Create hello.py that prints hello, then run it")
    assert nudges(h) == []


async def test_a_named_command_is_the_one_asked_for(harness) -> None:
    h = harness("text", [calls("text", HELLO), text_response("Done."), text_response("Done.")])
    await h.session.submit("Write hello.py and check it with `python3 -W error hello.py`.")
    assert "the task asks to run `python3 -W error hello.py`" in nudges(h)[0]


async def test_tests_that_must_pass_are_run_the_way_the_test_file_runs(harness) -> None:
    h = harness("text", [calls("text", ("edit_file", {"file_path": "stats.py", "old_string": "- 1",
                                                       "new_string": ""})),
                         text_response("Fixed."), text_response("Fixed.")])
    (h.root / "stats.py").write_text("def mean(xs):\n    return sum(xs) / (len(xs) - 1)\n")
    (h.root / "test_stats.py").write_text("from stats import mean\n\n\ndef test_mean():\n    assert mean([2]) == 2\n")
    await h.session.submit("Fix mean so the tests pass")
    assert "the task asks to run `python3 -m pytest -q test_stats.py`" in nudges(h)[0]


async def test_without_a_command_written_python_must_compile(harness) -> None:
    broken = ("write_file", {"file_path": "app.py", "content": "def f(:\n    pass\n"})
    fixed = ("write_file", {"file_path": "app.py", "content": "def f():\n    return 1\n"})  # not a stub
    h = harness("text", [calls("text", broken), text_response("Done."), calls("text", fixed),
                         text_response("Done.")])
    assert await h.session.submit("Write a function f in app.py") == "Done."
    assert len(nudges(h)) == 1
    assert nudges(h)[0].startswith("Before you finish: app.py does not compile: SyntaxError: ")
    assert "(line 1: `def f(:`)" in nudges(h)[0]


async def test_cloud_profiles_are_not_nudged(harness) -> None:
    h = harness("anthropic", [calls("anthropic", HELLO), text_response("Created hello.py.")])
    assert await h.session.submit("Create hello.py that prints hello, then run it") == "Created hello.py."
    assert nudges(h) == []


@pytest.mark.parametrize(("task", "expected"), [
    ("Create hello.py that prints hello, then run it", RunRequest(run_written=True)),
    ("Run `npm test` after the change", RunRequest(command="npm test")),
    ("fix it; python3 check.py --strict must print ok.", RunRequest(command="python3 check.py --strict")),
    ("Make sure the tests still pass", RunRequest(tests=True)),
    ("Run the script tool/count.py and write what it prints to out.txt", RunRequest(command="python3 tool/count.py")),
    ("Execute `deploy.sh` once", RunRequest(command="bash deploy.sh")),
    ("Fix stats.py so that python3 test_stats.py passes.", RunRequest(command="python3 test_stats.py")),
    ("Rename f to g in lib.py and app.py. The program must still run.", RunRequest(still_runs=True)),
    ("Delete it; both scripts must still run and print the rest.", RunRequest(still_runs=True)),
    ("Rename the class across the project. Behaviour must not change.", RunRequest(still_runs=True)),
    ("Write a python script that sums numbers", RunRequest()),
    ("The program must print the total", RunRequest()),
    ("Make the `title` field required", RunRequest()),
])
def test_what_a_task_asks_to_run(task: str, expected: RunRequest) -> None:
    assert run_request(task) == expected


async def test_the_program_that_must_still_run_is_the_named_script_that_runs_as_one(harness) -> None:
    # Seen with the 1.5B model: the definition renamed in lib.py, the call in app.py left,
    # and "renamed throughout the project" answered without running anything.
    rename = ("edit_file", {"file_path": "lib.py", "old_string": "def f(", "new_string": "def g("})
    h = harness("text", [calls("text", rename), text_response("Renamed f to g throughout the project."),
                         text_response("Done."), text_response("Done."), text_response("Done.")])
    (h.root / "lib.py").write_text("def f(x):\n    return x + 1\n")
    (h.root / "app.py").write_text("from lib import f\n\nif __name__ == \"__main__\":\n    print(f(1))\n")
    await h.session.submit("Rename the function f to g in lib.py and every call in app.py. "
                           "The program must still run.")
    # The rename guard speaks first (app.py still says `f`, and not only as a whole word).
    assert "app.py still uses `f`" in nudges(h)[0]
    assert "the task asks to run `python3 app.py`" in nudges(h)[1]
    ran = h.of(ev.ToolCallEnd)[-1]  # ignored once: codeloop runs it, and the model sees it fail
    assert ran.tool_name == "shell" and "ImportError" in (ran.output or ran.error or "")


def echo_tool_list(request):
    """The model answers with the tool list of its system prompt."""
    return text_response("\n".join(line for line in request.messages[0].text.splitlines() if line.startswith("## ")))


async def test_an_echoed_tool_list_as_final_answer_is_replaced_by_what_was_done(harness) -> None:
    h = harness("text", [calls("text", HELLO), calls("text", RUN_HELLO), *[echo_tool_list] * 3])  # 2 corrected
    answer = await h.session.submit("Create hello.py that prints hello, then run it")
    assert answer == f"{NO_ANSWER} What was done: wrote hello.py; ran `python3 hello.py` (exit 0)."
    assert h.of(ev.SessionEnd)[0].final_text == answer
    assert h.of(ev.AssistantTextEnd)[-1].text.startswith("## read_file")  # the model's words stay its own


async def test_an_empty_final_reply_is_reported_from_the_calls(harness) -> None:
    h = harness("text", [calls("text", HELLO), text_response(""), text_response(""), text_response("")])
    answer = await h.session.submit("Create hello.py that prints hello")
    assert answer == f"{NO_ANSWER} What was done: wrote hello.py."


async def test_quoting_what_a_program_printed_is_an_answer(harness) -> None:
    shell = ("shell", {"command": "printf 'apples: 42\\npears: 17 in stock\\n'"})
    answer = "It prints:\napples: 42\npears: 17 in stock"
    h = harness("text", [calls("text", shell), text_response(answer)])
    assert await h.session.submit("What does the command print?") == answer


async def test_an_echoed_tool_error_is_no_answer(harness) -> None:
    error: list[str] = []

    def echo_error(request):  # the tool's error, as the first reply after it showed it
        error[:] = error or [request.messages[-1].text.split("\n", 1)[1].rsplit("\n", 1)[0]]
        return text_response(error[0])

    h = harness("text", [calls("text", ("read_file", {"file_path": "missing.py"})), *[echo_error] * 3])  # 2 corrected
    answer = await h.session.submit("Implement solve")
    assert answer.startswith(NO_ANSWER) and "missing.py" in error[0]
    assert h.of(ev.AssistantTextEnd)[-1].text == error[0]  # the model's words stay its own


async def test_a_real_answer_is_kept(harness) -> None:
    h = harness("text", [calls("text", HELLO), text_response("Created hello.py; it prints hello.")])
    assert await h.session.submit("Create hello.py that prints hello") == "Created hello.py; it prints hello."


def test_echo_detection() -> None:
    seen = [("the tool list", "# Available tools\n## read_file: Read a file.\n## write_file: Write a file.\n",
             {"read_file", "write_file"})]
    assert echoed("# Available tools\n## read_file: Read a file.\n## write_file: Write a file.", seen)
    assert not echoed("I wrote the file with write_file.", seen)
    assert not echoed("Done.", seen)


async def test_a_copy_of_codeloops_own_note_is_no_answer(harness) -> None:
    # The one echo source the work report once judged alone: a note of codeloop's copied back.
    h = harness("text", [calls("text", HELLO), text_response(""),
                         *[text_response("If the task needs more, make the next tool call.")] * 3])
    answer = await h.session.submit("Create hello.py that prints hello")
    assert answer == NO_ANSWER + " What was done: wrote hello.py."


def test_the_exact_call_is_written_in_the_session_s_own_syntax() -> None:
    from types import SimpleNamespace

    from codeloop.agent.guards.verify_answer import call_form
    from codeloop.profiles import create_profile

    args = {"command": "python3 hello.py"}
    text, native = create_profile("text"), create_profile("anthropic")
    assert call_form(SimpleNamespace(constrained=False, profile=text), "shell", args) == (
        '<tool name="shell">\n<command>python3 hello.py</command>\n</tool>')
    assert call_form(SimpleNamespace(constrained=True, profile=text), "shell", args) == (
        '{"tool": "shell", "arguments": {"command": "python3 hello.py"}}')
    assert call_form(SimpleNamespace(constrained=False, profile=native), "shell", args) == (
        'shell with arguments {"command": "python3 hello.py"}')


async def test_a_model_that_only_echoes_after_writing_still_gets_the_named_command_run(harness) -> None:
    # The 1.5B model on the README's main job: it wrote hello.py, then copied its task message
    # back on every reply. Corrected twice, the echo falls to the later guards: codeloop runs
    # the command the task names, and the answer is the true report of the calls.
    def copy_task(request):
        return text_response(next(m.text for m in request.messages if m.role.value == "user"))

    h = harness("text", [calls("text", HELLO), *[copy_task] * 5])  # 2 corrected, 1 nudged to run, 1 run for it
    answer = await h.session.submit("Create hello.py that prints hello, then run it")
    ran = h.of(ev.ToolCallEnd)[-1]
    assert ran.tool_name == "shell" and (ran.output or "").startswith("hello")
    assert answer == f"{NO_ANSWER} What was done: wrote hello.py; ran `python3 hello.py` (exit 0)."
    assert h.session.end_reason == "completed"


async def test_a_failed_run_is_quoted_back_once_before_the_answer_is_taken(harness) -> None:
    # Seen with the 1.5B model: codeloop ran app.py for it, a SyntaxError came back, and the
    # model answered with the output it had hoped for ("Hello, Ada").
    broken = ("write_file", {"file_path": "app.py", "content": "def greet(name)\n    return name\n"})
    run_app = ("shell", {"command": "python3 app.py"})
    h = harness("text", [calls("text", broken), calls("text", run_app), text_response("It prints Hello, Ada."),
                         text_response("It prints Hello, Ada.")])
    await h.session.submit("app.py has a syntax error. Fix it so that python3 app.py runs.")
    told = [n for n in nudges(h) if "failed" in n]
    assert len(told) == 1 and told[0].startswith("Before you finish: `python3 app.py` failed (exit code 1), "
                                                  "so the task is not done:\n")
    assert "SyntaxError: expected ':'" in told[0] and "[exit code" not in told[0]
    assert told[0].endswith("\nFix the cause, run it again, then give your final answer.")
    # answered again with nothing done: the user reads what the run said beside the answer
    assert h.session.last_text == ("It prints Hello, Ada.\n\n(codeloop: `python3 app.py` failed, exit code 1: "
                                   "SyntaxError: expected ':')")


async def test_a_task_that_starts_with_a_run_has_it_run_before_the_first_reply_acts(harness) -> None:
    # Seen with the 1.5B model: "Run the script count.py and write the number it prints into
    # result.txt": it wrote the number it guessed (14) first; the script prints 42.
    guess = ("write_file", {"file_path": "result.txt", "content": "14\n"})
    right = ("write_file", {"file_path": "result.txt", "content": "42\n"})
    h = harness("text", [calls("text", guess), calls("text", right), text_response("result.txt holds 42.")])
    (h.root / "count.py").write_text("print(sum(range(7)) * 2)\n")
    await h.session.submit("Run the script count.py and write the number it prints into a new file result.txt.")
    first = h.of(ev.ToolCallEnd)[0]
    assert first.tool_name == "shell" and (first.output or "").startswith("42")
    assert [w.code for w in h.of(ev.WarningEvent)] == ["verify"]
    assert (h.root / "result.txt").read_text() == "42\n"
    seen = h.adapter.requests[1].messages
    assert "14" not in seen[-2].text and "42" in seen[-1].text  # its guess is not shown as made
    assert seen[-2].text == "<tool name=\"shell\">\n<command>python3 count.py</command>\n</tool>"


async def test_a_repeated_write_after_already_done_is_replaced_by_the_run_the_task_asks_for(harness) -> None:
    # Seen with the README's job: hello.py written, then the same write again, never run.
    write = ("write_file", {"file_path": "hello.py", "content": 'print("hello")\n'})
    h = harness("text", [calls("text", write), calls("text", write), calls("text", write),
                         text_response("hello.py prints hello.")])
    assert await h.session.submit("Create hello.py that prints hello, then run it") == "hello.py prints hello."
    assert [e.tool_name for e in h.of(ev.ToolCallStart)] == ["write_file", "write_file", "shell"]
    assert h.of(ev.ToolCallStart)[-1].arguments == {"command": "python3 hello.py"}
    assert "hello" in (h.of(ev.ToolCallEnd)[-1].output or "")
    assert h.session.end_reason != "loop_limit"
