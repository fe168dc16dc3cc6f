"""Issue 20: a function the task asks to implement is run against its own docstring examples
before the answer counts (an agent that can run code should beat its model answering once);
failing examples get one more draft alone, with the doctest report, and a second version
that fails as much is rolled back. Real python3 through the pipeline; small models only."""

from __future__ import annotations

from typing import Any

from codeloop.agent import events as ev
from codeloop.agent.guards.examples_check import failures, with_examples
from codeloop.llm.adapters.scripted import text_response
from codeloop.policy.model import Decision

from .agent_harness import calls

STUB = 'def double(x):\n    """Twice x.\n    >>> double(2)\n    4\n    >>> double(-1)\n    -2\n    """\n'
TASK = "Implement the function `double` in solution.py so that it does what its docstring says."


def _draft(body: str) -> str:
    return f"```python\n{STUB}    {body}\n```"


def _runs(h) -> list[Any]:
    return [e for e in h.of(ev.ToolCallEnd) if e.call_id.startswith("examples-") and e.tool_name == "shell"]


async def test_failing_examples_get_one_more_draft_with_the_report_and_are_run_again(harness) -> None:
    h = harness("text", [text_response(""), text_response(_draft("return x * 3")), text_response("Done."),
                         text_response("Done."), text_response(_draft("return x * 2")), text_response("Done."),
                         text_response("Done."), text_response("Done.")])
    (h.root / "solution.py").write_text(STUB)
    await h.session.submit(TASK)
    assert (h.root / "solution.py").read_text() == STUB + "    return x * 2\n"
    first, second = _runs(h)
    assert "Failed example" in (first.output or first.error or "") and "exit code: 0" in (second.output or "")
    redraft = [r for r in h.adapter.requests if "A first attempt failed these examples" in r.messages[-1].text]
    assert len(redraft) == 1 and redraft[0].messages[-1].text.endswith("Write a correct implementation.")
    assert "return x * 3" not in redraft[0].messages[-1].text  # shown it, the model wrote it again
    assert "Expected:\n    4\nGot:\n    6" in redraft[0].messages[-1].text
    assert [r.messages[0].role.value for r in redraft] == ["user"] and not redraft[0].tools


async def test_a_second_version_that_fails_as_much_is_rolled_back(harness) -> None:
    h = harness("text", [text_response(""), text_response(_draft("return x + 2")), text_response("Done."),
                         text_response("Done."), text_response(_draft("return x * 5")), text_response("Done.")]
                + [text_response("Done.")] * 3)
    (h.root / "solution.py").write_text(STUB)
    await h.session.submit(TASK)
    assert (h.root / "solution.py").read_text() == STUB + "    return x + 2\n"  # one example right, kept
    assert len(_runs(h)) == 2
    assert any("codeloop puts the first back" in w.message for w in h.of(ev.WarningEvent))


async def test_examples_that_pass_are_run_once_and_nothing_else_happens(harness) -> None:
    h = harness("text", [text_response(""), text_response(_draft("return x * 2")), text_response("Done."),
                         text_response("Done.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "Done."
    (run,) = _runs(h)
    assert run.output is not None and "exit code: 0" in run.output
    assert not [r for r in h.adapter.requests if "A first attempt failed" in r.messages[-1].text]


async def test_a_refused_run_is_no_failure_and_gets_no_redraft(harness) -> None:
    async def no_shell(call: Any, env: Any) -> Decision:
        return Decision.deny("no commands") if call.name == "shell" else Decision.allow()

    h = harness("text", [text_response(""), text_response(_draft("return x * 3"))] + [text_response("Done.")] * 4)
    h.session.policy = no_shell
    (h.root / "solution.py").write_text(STUB)
    await h.session.submit(TASK)
    assert (h.root / "solution.py").read_text() == STUB + "    return x * 3\n"
    assert not [r for r in h.adapter.requests if "A first attempt failed" in r.messages[-1].text]


async def test_a_cloud_session_runs_nothing(harness) -> None:
    edit = ("edit_file", {"file_path": "solution.py", "old_string": STUB, "new_string": STUB + "    return x * 3\n"})
    h = harness("anthropic", [calls("anthropic", edit), text_response("Done."), text_response("Done.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit(TASK) == "Done."
    assert [s.tool_name for s in h.of(ev.ToolCallStart)] == ["edit_file"]


def test_which_functions_have_examples_and_how_failures_are_counted() -> None:
    assert with_examples(STUB, {"double"}) == ["double"]
    assert with_examples('def f():\n    """No examples."""\n', {"f"}) == []
    assert with_examples(STUB, {"other"}) == [] and with_examples("def (:", {"double"}) == []
    assert failures("***Test Failed*** 2 failures.\n") == 2
    assert failures("Traceback ...\nSyntaxError: invalid syntax\n[exit code: 1]") == 1
