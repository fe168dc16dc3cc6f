"""Issue 20: a function the task names that is still a stub (only its docstring) is drafted by
the model alone, in the chat form a small model is good at, and applied as the model's next
call (scripted replies, a real workspace, the real pipeline); stubs the task does not name,
and cloud profiles, are left alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.guards.stub_left import implementation, stubs
from codeloop.llm.adapters.scripted import text_response
from codeloop.llm.types import Usage

from .agent_harness import calls

STUB = 'def modp(n: int, p: int):\n    """Return 2^n modulo p.\n    >>> modp(3, 5)\n    3\n    """\n'
BODY = "    return pow(2, n, p)\n"
DRAFT = f"Here it is:\n```python\n{STUB}{BODY}```\nIt uses pow."
TASK = "Implement the function `modp` in solution.py so that it does what its docstring says."


def notes(h) -> list[str]:
    return [e.content for e in h.of(ev.SteeringInjected)]


def warnings(h) -> list[str]:
    # The run of the docstring's examples after the draft is test_examples_check.py's subject.
    return [e.message for e in h.of(ev.WarningEvent) if e.code == "verify" and "examples" not in e.message]


def drafted(events: list) -> list:
    """The tool events of the model's (and the draft's) calls, without the examples' run."""
    return [e for e in events if not e.call_id.startswith("examples-")]


async def test_the_stub_written_back_is_drafted_alone_and_applied_through_the_pipeline(harness) -> None:
    # Seen with the 1.5B model: write_file of the same signature and docstring, then "done".
    # From its first reply on, a stub the task names is drafted alone; the draft's edit takes
    # the place of that reply's calls.
    again = ("write_file", {"file_path": "solution.py", "content": STUB})
    h = harness("text", [calls("text", again),
                         text_response(DRAFT, usage=Usage(input_tokens=212, output_tokens=37, cache_read_tokens=5)),
                         text_response("I implemented modp with pow.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "I implemented modp with pow."
    assert (h.root / "solution.py").read_text() == STUB + BODY
    assert warnings(h) == ["`modp` in solution.py was still a stub: codeloop asked the model for that function "
                           "alone and applies its answer"]
    side = h.adapter.requests[1]  # the draft: the task and the file, nothing else
    assert [m.role.value for m in side.messages] == ["user"] and not side.tools
    assert side.messages[0].text.startswith(TASK + "\n\nComplete the following Python function `modp` (solution.py):")
    assert f"```python\n{STUB}```" in side.messages[0].text
    # the draft's tokens are reported, though it is no turn of the conversation
    assert [w.message for w in h.of(ev.WarningEvent) if w.code == "model_usage"] == [
        "a request outside the conversation: 212 tokens in (5 cached), 37 out"]
    assert len(h.of(ev.AssistantTextEnd)) == 2
    (edit,) = drafted(h.of(ev.ToolCallEnd))  # the stub written back never ran: the draft's edit did, as a call like any other
    assert edit.tool_name in ("write_file", "edit_file") and not edit.is_error
    history = h.adapter.requests[-1].messages
    assert "pow(2, n, p)" in history[2].text  # the model sees the draft's call as its own reply


async def test_an_empty_reply_over_the_untouched_stub_gets_the_draft(harness) -> None:
    h = harness("text", [text_response(""), text_response(DRAFT), text_response("Done.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "Done."
    assert (h.root / "solution.py").read_text() == STUB + BODY and notes(h) == []


async def test_a_draft_without_the_function_tells_the_model_once(harness) -> None:
    h = harness("text", [text_response("I implemented modp."), text_response("I cannot see the file."),
                         text_response("It is implemented.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "It is implemented."
    (told,) = notes(h)
    assert told.startswith("`modp` in solution.py still has no code, only its docstring: the task is not done.")
    assert "solution.py\n```python\n" in told  # the text profile's form of writing it
    assert (h.root / "solution.py").read_text() == STUB


async def test_a_first_reply_that_only_reads_is_replaced_by_the_draft(harness) -> None:
    read = ("read_file", {"file_path": "solution.py"})
    h = harness("text", [calls("text", read), text_response(DRAFT), text_response("Done.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "Done."
    assert [e.tool_name for e in drafted(h.of(ev.ToolCallStart))] in (["edit_file"], ["write_file"])  # no read ran
    assert (h.root / "solution.py").read_text() == STUB + BODY


async def test_later_replies_that_only_read_are_left_alone(harness) -> None:
    read = ("read_file", {"file_path": "solution.py"})
    h = harness("text", [calls("text", read), text_response("no code in here"), calls("text", read),
                         text_response("I implemented it."), text_response(DRAFT), text_response("Done.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "Done."
    assert [e.tool_name for e in h.of(ev.ToolCallStart)][:1] == ["read_file"]  # no draft at first: the read ran
    assert (h.root / "solution.py").read_text() == STUB + BODY


async def test_stubs_the_task_does_not_name_are_left_alone(harness) -> None:
    shape = 'class Shape:\n    def area(self):\n        raise NotImplementedError\n'
    add = ("write_file", {"file_path": "shapes.py", "content": shape + "\n\nSIDES = 4\n"})
    h = harness("text", [calls("text", add), text_response("Added SIDES.")])
    (h.root / "shapes.py").write_text(shape)
    assert await h.session.submit("Add a constant SIDES = 4 to shapes.py.") == "Added SIDES."
    assert notes(h) == [] and warnings(h) == []


async def test_cloud_profiles_are_not_touched(harness) -> None:
    h = harness("openai", [text_response("I implemented modp.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "I implemented modp."
    assert notes(h) == [] and len(h.adapter.requests) == 1


def test_what_counts_as_a_stub() -> None:
    source = ('def a():\n    """Doc."""\n\ndef b():\n    pass\n\ndef c(): ...\n\nasync def d():\n'
              '    raise NotImplementedError("later")\n\nclass K:\n    def e(self):\n        """Doc."""\n'
              '        ...\n\ndef f():\n    """Doc."""\n    return 1\n\ndef g():\n    raise ValueError\n')
    assert sorted(stubs(source)) == ["a", "b", "c", "d", "e"]
    assert stubs("def broken(:\n") == []


def test_an_implementation_is_a_block_defining_the_function_with_code() -> None:
    assert implementation(DRAFT, "modp") == STUB + BODY
    assert implementation(f"```python\n{STUB}```", "modp") is None  # the stub again
    assert implementation("```python\ndef other():\n    return 1\n```", "modp") is None
    assert implementation("def modp(n, p):\n    return 1", "modp") == "def modp(n, p):\n    return 1\n"


@given(st.text(max_size=300))
def test_stubs_and_implementations_never_raise_on_any_text(text: str) -> None:
    assert set(stubs(text)) <= set(__import__("re").findall(r"\w+", text))
    found = implementation(text, "f")
    assert found is None or ("def f" in found and "f" not in stubs(found))


async def test_the_draft_is_asked_on_the_file_as_the_input_found_it(harness) -> None:
    # Seen on HumanEval/1: the model's rewrite of the stub dropped `from typing import List`.
    typed = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum."""\n'
    dropped = 'def total(xs: List[int]) -> int:\n    """Sum."""\n'
    rewrite = ("write_file", {"file_path": "calc.py", "content": dropped})
    draft = f"```python\n{typed}    return sum(xs)\n```"
    # the first draft gives no function, so the rewrite runs; the answer after it gets a second draft
    h = harness("text", [calls("text", rewrite), text_response("no code"), text_response("Done."),
                         text_response(draft), text_response("Done.")])
    (h.root / "calc.py").write_text(typed)
    await h.session.submit("Implement `total` in calc.py.")
    assert "from typing import List" in h.adapter.requests[3].messages[0].text
    assert (h.root / "calc.py").read_text().startswith("from typing import List")
    assert "return sum(xs)" in (h.root / "calc.py").read_text()


async def test_a_first_reply_that_writes_the_function_itself_gets_the_draft_in_its_place(harness) -> None:
    # HumanEval/65 at 3d7664e: the first call wrote a wrong body; the bare chat answer was right.
    own = ("write_file", {"file_path": "solution.py", "content": STUB + "    return 2 ** n\n"})
    h = harness("text", [calls("text", own), text_response(DRAFT), text_response("Done.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "Done."
    assert (h.root / "solution.py").read_text() == STUB + BODY
    assert len(warnings(h)) == 1 and len(drafted(h.of(ev.ToolCallEnd))) == 1  # the draft's edit, not the reply's write


# -- a function the task asks to add -----------------------------------------------------------

MATH = "def square(x):\n    return x * x\n"
ADD_TASK = "Add a function is_even(n) to mathutils.py that returns True when n is even. Keep the existing function."
IS_EVEN = "def is_even(n):\n    return n % 2 == 0\n"


async def test_a_function_the_task_asks_to_add_is_drafted_alone_and_added_after_the_code(harness) -> None:
    # Seen with the 1.5B model (dev task 06): its first call replaced the line `def square(x):`
    # with `def is_even(n):`, losing square and leaving is_even returning x * x.
    renamed = ("edit_file", {"file_path": "mathutils.py", "old_string": "def square(x):", "new_string": "def is_even(n):"})
    h = harness("text", [calls("text", renamed), text_response(f"```python\n{IS_EVEN}```"), text_response("Added is_even.")])
    (h.root / "mathutils.py").write_text(MATH)
    assert await h.session.submit(ADD_TASK) == "Added is_even."
    assert (h.root / "mathutils.py").read_text() == MATH + "\n\n" + IS_EVEN
    assert warnings(h) == ["mathutils.py had no function `is_even` yet: codeloop asked the model for that function "
                           "alone and applies its answer"]
    asked = h.adapter.requests[1].messages[0].text
    assert asked.startswith(ADD_TASK + "\n\nWrite the Python function `is_even` to add to mathutils.py, which holds:")
    assert [e.tool_name for e in h.of(ev.ToolCallEnd)] == ["edit_file"]  # the draft's edit; the rename never ran


async def test_a_first_reply_that_adds_the_function_and_keeps_the_rest_runs_as_it_is(harness) -> None:
    added = ("write_file", {"file_path": "mathutils.py", "content": MATH + "\n\n" + IS_EVEN})
    h = harness("text", [calls("text", added), text_response("Added is_even.")])
    (h.root / "mathutils.py").write_text(MATH)
    assert await h.session.submit(ADD_TASK) == "Added is_even."
    assert warnings(h) == [] and len(h.adapter.requests) == 2


async def test_a_function_still_missing_at_the_answer_is_told_when_no_draft_comes(harness) -> None:
    h = harness("text", [text_response("I added it."), text_response("no code"), text_response("Sorry.")])
    (h.root / "mathutils.py").write_text(MATH)
    await h.session.submit(ADD_TASK)
    (told,) = notes(h)
    assert told.startswith("mathutils.py has no function `is_even` yet: the task is not done.")
    assert (h.root / "mathutils.py").read_text() == MATH


def test_which_functions_a_task_asks_to_add() -> None:
    from codeloop.agent.guards.stub_left import wanted_functions

    assert wanted_functions(ADD_TASK) == ["is_even"]
    assert wanted_functions("Add parse_size(text) to units.py, the reverse of format_size") == ["parse_size"]
    assert wanted_functions("Write a function called `slugify` in text.py") == ["slugify"]
    assert wanted_functions("Add a call to foo() in x.py") == []  # a call, not a function to write
    assert wanted_functions("Add a --limit N option to todo.py") == []
    assert wanted_functions("Add logging to main() in app.py") == []


@given(st.text(max_size=200))
def test_any_task_is_read_without_error(task: str) -> None:
    from codeloop.agent.guards.stub_left import wanted_functions

    assert all(name.isidentifier() and name in task for name in wanted_functions(task))


async def test_a_function_added_to_a_file_without_functions_keeps_what_the_file_holds(harness) -> None:
    consts = "RATE = 2\nNAMES = ['a', 'b']\n"
    h = harness("text", [text_response("I will add it."), text_response("```python\ndef double(x):\n    return x * RATE\n```"),
                         text_response("Added double.")])
    (h.root / "calc.py").write_text(consts)
    await h.session.submit("Add a function double(x) to calc.py that multiplies x by RATE.")
    assert (h.root / "calc.py").read_text() == consts + "\n\ndef double(x):\n    return x * RATE\n"
