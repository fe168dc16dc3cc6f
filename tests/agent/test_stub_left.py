"""Issue 20: a function the task names that is still a stub (only its docstring) is pointed
out to a small model, after it wrote the stub back and before it answers (scripted replies,
a real workspace); stubs the task does not name, and cloud profiles, are left alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.guards.stub_left import stubs
from codeloop.llm.adapters.scripted import text_response

from .agent_harness import calls

STUB = 'def modp(n: int, p: int):\n    """Return 2^n modulo p.\n    >>> modp(3, 5)\n    3\n    """\n'
DONE = 'def modp(n: int, p: int):\n    """Return 2^n modulo p."""\n    return pow(2, n, p)\n'
TASK = "Implement the function `modp` in solution.py so that it does what its docstring says."


def notes(h) -> list[str]:
    return [e.content for e in h.of(ev.SteeringInjected)]


async def test_the_stub_written_back_is_pointed_out_and_the_function_then_written(harness) -> None:
    # Seen with the 1.5B model: write_file of the same signature and docstring, then "done".
    again = ("write_file", {"file_path": "solution.py", "content": STUB})
    h = harness("text", [calls("text", again), text_response(f"solution.py\n```python\n{DONE}```"),
                         text_response("I implemented modp.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "I implemented modp."
    (told,) = notes(h)
    assert told.startswith("`modp` in solution.py still has no code, only its docstring: the task is not done.")
    assert "solution.py\n```python\n" in told  # the text profile's form of writing it
    assert (h.root / "solution.py").read_text() == DONE


async def test_an_answer_over_an_untouched_stub_is_sent_back_once(harness) -> None:
    h = harness("text", [text_response("I implemented modp."), text_response("It is implemented.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "It is implemented."
    assert len(notes(h)) == 1 and notes(h)[0].startswith("`modp` in solution.py still has no code")


async def test_stubs_the_task_does_not_name_are_left_alone(harness) -> None:
    shape = 'class Shape:\n    def area(self):\n        raise NotImplementedError\n'
    add = ("write_file", {"file_path": "shapes.py", "content": shape + "\n\nSIDES = 4\n"})
    h = harness("text", [calls("text", add), text_response("Added SIDES.")])
    (h.root / "shapes.py").write_text(shape)
    await h.session.submit("Add a constant SIDES = 4 to shapes.py.")
    assert notes(h) == []


async def test_cloud_profiles_are_not_told(harness) -> None:
    h = harness("openai", [text_response("I implemented modp.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "I implemented modp."
    assert notes(h) == []


def test_what_counts_as_a_stub() -> None:
    source = ('def a():\n    """Doc."""\n\ndef b():\n    pass\n\ndef c(): ...\n\nasync def d():\n'
              '    raise NotImplementedError("later")\n\nclass K:\n    def e(self):\n        """Doc."""\n'
              '        ...\n\ndef f():\n    """Doc."""\n    return 1\n\ndef g():\n    raise ValueError\n')
    assert sorted(stubs(source)) == ["a", "b", "c", "d", "e"]
    assert stubs("def broken(:\n") == []


@given(st.text(max_size=300))
def test_stubs_never_raise_on_any_text(text: str) -> None:
    assert set(stubs(text)) <= set(__import__("re").findall(r"\w+", text))
