"""Issue 20: an edit that drops a definition the task never named is pointed out to a small
model (scripted replies, a real workspace); a rename the task asks for is not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.guards.kept_definitions import definitions
from codeloop.llm.adapters.scripted import text_response

from .agent_harness import calls

MATH = "def square(x):\n    return x * x\n"


def notes(h) -> list[str]:
    return [e.content for e in h.of(ev.SteeringInjected)]


async def test_adding_a_function_over_the_existing_one_is_pointed_out_once(harness) -> None:
    # Seen with the 1.5B model on "Add a function is_even(n) ... Keep the existing function".
    over = ("edit_file", {"file_path": "mathutils.py", "old_string": "def square(x):", "new_string": "def is_even(n):"})
    fixed = ("write_file", {"file_path": "mathutils.py",
                            "content": MATH + "\n\ndef is_even(n):\n    return n % 2 == 0\n"})
    h = harness("text", [calls("text", over), calls("text", fixed),
                         text_response("Added is_even.")])
    (h.root / "mathutils.py").write_text(MATH)
    await h.session.submit("Add a function is_even(n) to mathutils.py that returns True when n is even. "
                           "Keep the existing function.")
    assert notes(h) == ["Note: after that change, mathutils.py no longer defines `square`, which the task did not "
                        "ask to remove. Keep the existing code: put back what went missing, exactly as it was, "
                        "and add the new code beside it."]
    assert "def square(x)" in (h.root / "mathutils.py").read_text()


async def test_a_rename_or_removal_the_task_names_is_not_questioned(harness) -> None:
    rename = ("edit_file", {"file_path": "shop.py", "old_string": "def calc_total(", "new_string": "def compute_total("})
    h = harness("text", [calls("text", rename), text_response("Renamed.")])
    (h.root / "shop.py").write_text("def calc_total(xs):\n    return sum(xs)\n")
    await h.session.submit("Rename the function calc_total to compute_total in shop.py.")
    assert notes(h) == []


async def test_cloud_profiles_are_not_told(harness) -> None:
    over = ("edit_file", {"file_path": "mathutils.py", "old_string": "def square(x):", "new_string": "def is_even(n):"})
    h = harness("openai", [calls("openai", over), text_response("Added is_even.")])
    (h.root / "mathutils.py").write_text(MATH)
    await h.session.submit("Add a function is_even(n) to mathutils.py.")
    assert notes(h) == []


@given(st.text(max_size=400))
def test_definitions_never_raise_and_find_what_a_def_line_names(text: str) -> None:
    assert definitions(text) <= set(__import__("re").findall(r"\w+", text))
    assert "zeta_1" in definitions(text + "\nclass zeta_1:\n    pass\n")


def test_imported_names_count_as_defined() -> None:
    text = "from typing import List, Dict as D\nimport os.path\nimport numpy as np\nfrom x import (a, b)\n"
    assert definitions(text) >= {"List", "D", "np", "a", "b"}
    assert "os" not in definitions("import os.path\n")  # (a dotted import binds os, not counted: no false alarm)


async def test_a_rewrite_that_drops_an_import_still_used_is_pointed_out(harness) -> None:
    # Seen with the 1.5B model on HumanEval/1: solution.py rewritten without `from typing import List`.
    before = "from typing import List\n\n\ndef f(xs: List[int]) -> int:\n    ...\n"
    after = "def f(xs: List[int]) -> int:\n    return sum(xs)\n"
    h = harness("text", [calls("text", ("write_file", {"file_path": "solution.py", "content": after})),
                         text_response("Done.")])
    (h.root / "solution.py").write_text(before)
    await h.session.submit("Implement the function `f` in solution.py.")
    assert notes(h)[0].startswith("Note: after that change, solution.py no longer defines `List`")


async def test_renaming_the_function_the_task_asks_to_implement_is_pointed_out(harness) -> None:
    # Seen on HumanEval/33: asked to implement `sort_third`, the 1.5B model renamed it.
    rename = ("edit_file", {"file_path": "solution.py", "old_string": "def sort_third(",
                            "new_string": "def sort_third_modified("})
    h = harness("text", [calls("text", rename), text_response("Done.")])
    (h.root / "solution.py").write_text("def sort_third(l):\n    return sorted(l)\n")
    await h.session.submit("Implement the function `sort_third` in solution.py.")
    assert notes(h) == ["Note: after that change, solution.py no longer defines `sort_third`, which the task did "
                        "not ask to remove. Keep the existing code: put back what went missing, exactly as it "
                        "was, and add the new code beside it."]
