"""Small-model rescue (issue 20): a reply that is the tool list, the system prompt or a tool
error copied back, or nothing, is not taken as the final answer; the model gets one precise
correction in its own call syntax. Local / small-window profiles only."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.call_forms import CallForms
from codeloop.agent.config import SessionConfig
from codeloop.agent.guards.echo_reply import (
    ECHO_SHARE,
    MAX_CORRECTIONS,
    NO_ANSWER,
    echoed,
    own_lines,
    repeated_share,
    words,
)
from codeloop.llm.adapters.scripted import text_response
from codeloop.llm.types import Request, Response

from .agent_harness import tagged

TAGGED_READ = '<tool name="read_file">\n<file_path>FILE_PATH</file_path>\n</tool>'
FINISH = "To finish, reply with one or two sentences saying what you did."


def _system(request: Request) -> str:
    return request.messages[0].text


def _tool_list_copy(request: Request) -> Response:
    system = _system(request)
    return text_response(system[system.index("# Available tools"):])


def _steering(h) -> list[str]:
    return [e.content for e in h.of(ev.SteeringInjected)]


async def test_the_tool_list_copied_back_is_sent_back_with_the_exact_call_form(harness) -> None:
    h = harness("text", [_tool_list_copy, text_response(tagged("write_file", {"file_path": "hello.txt",
                                                                               "content": "hello\n"})),
                         text_response("I created hello.txt, which says hello.")])
    answer = await h.session.submit("Create hello.txt that says hello.")
    assert answer == "I created hello.txt, which says hello." and h.session.end_reason == "completed"
    assert _steering(h) == [
        f"Your reply repeated the tool list; that is not an answer. To act, make one tool call, for example:\n"
        f"{TAGGED_READ}\n{FINISH}"]
    assert (h.root / "hello.txt").read_text() == "hello\n"


async def test_a_list_of_tool_names_in_the_models_own_words_is_an_echo_too(harness) -> None:
    h = harness("text", [text_response("Available tools: edit_file, glob, grep, read_file, shell, write_file"),
                         text_response("Nothing needed changing.")])
    assert await h.session.submit("Tidy up.") == "Nothing needed changing."
    assert _steering(h)[0].startswith("Your reply repeated the tool list")


async def test_the_error_of_the_last_call_copied_back_is_not_an_answer(harness) -> None:
    def copy_error(request: Request) -> Response:
        result = request.messages[-1].text
        return text_response(re.sub(r"</?tool_result[^>]*>", "", result).strip())

    h = harness("text", [text_response(tagged("read_file", {"file_path": "missing.py"})), copy_error,
                         text_response("missing.py does not exist, so there is nothing to fix.")])
    assert await h.session.submit("Fix missing.py.") == "missing.py does not exist, so there is nothing to fix."
    (note,) = _steering(h)
    assert note.startswith("Your reply repeated the error of your last tool call; that is not an answer. "
                           "Fix the call as the error says. To act, make one tool call, for example:\n")
    assert TAGGED_READ in note


async def test_the_system_prompt_copied_back_is_not_an_answer(harness) -> None:
    def copy_environment(request: Request) -> Response:
        system = _system(request)
        return text_response(system[system.index("<environment>"):system.index("</environment>")])

    h = harness("text", [copy_environment, text_response("Done: nothing to change.")])
    assert await h.session.submit("Check the workspace.") == "Done: nothing to change."
    assert _steering(h)[0].startswith("Your reply repeated your system prompt; that is not an answer.")


async def test_an_empty_first_reply_gets_the_correction_and_repeated_ones_end_the_input(harness) -> None:
    h = harness("text", [text_response("")] * (MAX_CORRECTIONS + 1))
    answer = await h.session.submit("Create hello.py")
    assert answer.endswith("Nothing was changed and no command was run.")  # the report, not the empty text
    assert h.session.end_reason == NO_ANSWER
    assert _steering(h) == [f"Your reply was empty. To act, make one tool call, for example:\n{TAGGED_READ}\n{FINISH}"
                            ] * MAX_CORRECTIONS
    assert len(h.adapter.requests) == MAX_CORRECTIONS + 1


async def test_a_native_small_session_gets_the_native_form_and_the_last_tool_it_used(harness) -> None:
    h = harness("anthropic", [text_response(""), text_response("All done.")], SessionConfig(small_model_rescues=True))
    assert await h.session.submit("hi") == "All done."
    assert 'read_file with arguments {"file_path": "FILE_PATH"}' in _steering(h)[0]
    forms = CallForms({"shell": {"required": ["command"]}, "read_file": {"required": ["file_path"]}}, "json")
    assert forms.example(("shell",)) == '{"tool": "shell", "arguments": {"command": "COMMAND"}}'
    assert forms.example(("unknown",)) == '{"tool": "read_file", "arguments": {"file_path": "FILE_PATH"}}'


async def test_a_cloud_session_takes_the_same_replies_as_answers(harness) -> None:
    tools = "Available tools: edit_file, glob, grep, read_file, shell, write_file"
    h = harness("anthropic", [text_response(tools), text_response("")])
    assert not h.session.small_model
    assert await h.session.submit("a") == tools
    assert await h.session.submit("b") == "" and h.session.end_reason == "completed"
    assert not _steering(h)


REAL_ANSWERS = [
    "I created hello.py, which prints hello, and ran it with shell: it printed hello.",
    "Fixed the off-by-one in stats.py (range(len(xs)) instead of range(len(xs) - 1)); test_stats.py passes.",
    "I used read_file and edit_file to rename the function, then grep to check no old name is left.",
    "The file already had the key set to true, so I did not change it.",
    "Done.",
    "hello",
]


async def test_real_answers_are_answers(harness) -> None:
    for answer in REAL_ANSWERS:
        h = harness("text", [text_response(answer)], SessionConfig(check_claims=False))
        assert await h.session.submit("do the task") == answer
        assert not _steering(h), answer


def test_the_share_of_repeated_words_is_measured_on_runs_of_words() -> None:
    source = "Read a file before editing it. Run the program or tests to check your work."
    assert repeated_share(words("read a file before editing it"), source) == 1.0
    assert repeated_share(words("read the file, then edit it"), source) == 0.0
    assert repeated_share(words("run shell now"), "", {"shell"}) == 1 / 3
    assert echoed("a b c", [("x", "a b c", ())]) is None  # too short to judge


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300))
def test_echo_measure_never_raises_and_a_text_always_repeats_itself(reply: str, source: str) -> None:
    share = repeated_share(words(reply), source)
    assert 0.0 <= share <= 1.0
    if len(words(reply)) >= 4:
        assert echoed(reply, [("itself", reply, ())]) == "itself"
        assert repeated_share(words(reply), reply) >= ECHO_SHARE


async def test_an_empty_reply_after_work_was_done_is_asked_to_finish_without_a_template(harness) -> None:
    # Seen with the real 1.5B model: offered the template, it wrote a file named FILE_PATH.
    write = tagged("write_file", {"file_path": "hello.py", "content": 'print("hello")\n'})
    h = harness("text", [text_response(write), text_response(""), text_response("I created hello.py.")])
    assert await h.session.submit("Create hello.py that prints hello.") == "I created hello.py."
    assert _steering(h) == ["Your reply was empty. If the task needs more, make the next tool call. " + FINISH]


async def test_a_placeholder_of_the_example_copied_as_a_value_is_not_run(harness) -> None:
    copied = tagged("write_file", {"file_path": "FILE_PATH", "content": "CONTENT"})
    h = harness("text", [text_response(copied), text_response("Done.")])
    await h.session.submit("Create notes.txt")
    assert not (h.root / "FILE_PATH").exists()
    end = h.of(ev.ToolCallEnd)[0]
    assert end.is_error and "FILE_PATH, CONTENT is the placeholder of the example" in (end.error or "")


async def test_the_task_message_copied_back_is_not_an_answer(harness) -> None:
    # Seen with the 1.5B model: after a write it replied with the task message (workspace map and all).
    def copy_task(request: Request) -> Response:
        return text_response(next(m.text for m in request.messages if m.role.value == "user"))

    write = tagged("write_file", {"file_path": "hello.py", "content": 'print("hello")\n'})
    h = harness("text", [text_response(write), copy_task, text_response("I created hello.py.")])
    assert await h.session.submit("Create hello.py that prints hello, please.") == "I created hello.py."
    assert _steering(h)[0].startswith("Your reply repeated the task message; that is not an answer.")


async def test_an_answer_in_the_tasks_own_words_is_not_a_copy_of_it(harness) -> None:
    # Seen with the 1.5B model: "The test in test_stats.py passes." was sent back as a copy of
    # the task, three times, until the input ended unanswered.
    task = ("The test in test_stats.py fails because last_n in stats.py has an off-by-one bug. "
            "Fix stats.py so that python3 test_stats.py passes. Do not change the test.")
    for answer in ("The test in test_stats.py passes.",
                   "I fixed the off-by-one bug in stats.py so that python3 test_stats.py passes."):
        h = harness("text", [text_response(answer)] * 3, SessionConfig(check_claims=False))
        await h.session.submit(task)
        assert not any("repeated" in s for s in _steering(h)), answer  # (the run of the test is asked for)


async def test_the_models_own_sentence_after_a_copied_tool_list_is_the_answer(harness) -> None:
    # Seen with the 1.5B model after a successful edit: the tool list copied back with a true
    # sentence at its end; corrected twice, it sent the same again (100 s for a one-line edit).
    def list_then_answer(request: Request) -> Response:
        listed = [line for line in request.messages[0].text.splitlines() if line.startswith("## ")]
        return text_response("\n".join(["# Available tools", *listed, "",
                                        "I replaced the port 3000 with 8080 in settings.json."]))

    edit = tagged("write_file", {"file_path": "settings.json", "content": '{"port": 8080}\n'})
    h = harness("text", [text_response(edit), list_then_answer])
    answer = await h.session.submit("In settings.json, set port to 8080.")
    assert answer == "I replaced the port 3000 with 8080 in settings.json."
    assert not _steering(h)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                        max_size=60), max_size=8), st.text(max_size=200))
def test_own_lines_are_lines_of_the_reply_that_the_source_does_not_hold(lines: list[str], source: str) -> None:
    kept = own_lines("\n".join(lines), [("x", source, ())])
    for line in kept.splitlines():
        assert line.strip() in [given.strip() for given in lines] and line.strip().lower() not in source.lower()
    assert own_lines(source, [("x", source, ())]) == ""  # a copy keeps nothing


async def test_an_empty_reply_after_an_error_proposing_a_call_is_offered_that_call(harness) -> None:
    # Seen with the 1.5B model: delete_file refused with "call shell: rm -- obsolete.txt", then
    # an empty reply; offered read_file FILE_PATH, it read the file and claimed it deleted.
    # (A complete delete_file now runs as the rm it meant; here the error of a tool named like
    # the file proposes the exact read_file call.)
    h = harness("text", [text_response('<tool name="obsolete"></tool>'), text_response(""),
                         text_response(tagged("shell", {"command": "rm -- obsolete.txt"})),
                         text_response("Deleted obsolete.txt.")])
    (h.root / "obsolete.txt").write_text("old data\n")
    await h.session.submit("Delete the file obsolete.txt.")
    assert _steering(h)[0] == ('Your reply was empty. To act, make one tool call, for example:\n<tool name="read_file">\n'
                               "<file_path>obsolete.txt</file_path>\n</tool>\n" + FINISH)
    assert not (h.root / "obsolete.txt").exists()
