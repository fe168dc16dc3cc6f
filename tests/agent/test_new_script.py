"""Issue 20: a new script the task asks for is drafted by the model alone (the chat form a
small model is good at) in place of its first reply, and written through the pipeline (seen
with the 1.5B model on dev task 36: `read_file` of the CSV with an invented `column`
argument, four times, nothing written). Small-model sessions only."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.guards.new_script import drafted_script, wanted_script
from codeloop.llm.adapters.scripted import text_response
from codeloop.policy.model import Decision

from .agent_harness import calls

TASK = ("Write a script colsum.py that prints the sum of one column of a CSV file, given the file and the column "
        "name: for example `python3 colsum.py sales.csv amount`.")
CSV = "date,amount\n2024-03-01,120\n2024-03-02,-15\n"
SCRIPT = ("import csv\nimport sys\n\nwith open(sys.argv[1], newline='') as f:\n"
          "    print(sum(int(row[sys.argv[2]]) for row in csv.DictReader(f)))\n")
DRAFT = f"Here is the script:\n```python\n{SCRIPT}```\nRun it with two arguments."
WANDER = ("read_file", {"file_path": "sales.csv", "column": "amount"})


async def test_the_first_reply_is_replaced_by_the_script_drafted_alone(harness) -> None:
    h = harness("text", [calls("text", WANDER), text_response(DRAFT), text_response("colsum.py prints 105."),
                         text_response("colsum.py prints 105.")])
    (h.root / "sales.csv").write_text(CSV)
    await h.session.submit(TASK)
    assert (h.root / "colsum.py").read_text() == SCRIPT
    done = subprocess.run([sys.executable, "colsum.py", "sales.csv", "amount"], cwd=h.root, capture_output=True,
                          text=True, timeout=30)
    assert done.stdout == "105\n"
    side = h.adapter.requests[1]  # the draft: the task, the CSV it reads, the ask; no tools, no history
    assert [m.role.value for m in side.messages] == ["user"] and not side.tools
    assert side.messages[0].text.startswith(TASK) and f"sales.csv:\n```\n{CSV}```" in side.messages[0].text
    assert side.messages[0].text.endswith(
        "Write the complete file colsum.py. Where the task says what it prints, it prints exactly that and nothing "
        "more. Reply with the whole file in one fenced code block.")
    starts = h.of(ev.ToolCallStart)
    assert starts[0].tool_name == "write_file" and starts[0].call_id.startswith("draft-")
    assert not [s for s in starts if s.tool_name == "read_file"]  # the wandering read never ran
    assert any(w.code == "verify" and "new script colsum.py" in w.message for w in h.of(ev.WarningEvent))


async def test_a_first_reply_that_writes_the_script_runs_as_it_is(harness) -> None:
    own = ("write_file", {"file_path": "colsum.py", "content": SCRIPT})
    h = harness("text", [calls("text", own)] + [text_response("Wrote colsum.py.")] * 3)
    (h.root / "sales.csv").write_text(CSV)
    await h.session.submit(TASK)
    assert (h.root / "colsum.py").read_text() == SCRIPT
    assert not [s for s in h.of(ev.ToolCallStart) if s.call_id.startswith("draft-")]
    assert not [r for r in h.adapter.requests if r.messages[-1].text.endswith("one fenced code block.")]  # no draft


async def test_a_draft_that_does_not_parse_is_dropped_and_the_reply_runs(harness) -> None:
    own = ("read_file", {"file_path": "sales.csv"})
    h = harness("text", [calls("text", own), text_response("```python\ndef broken(:\n```"),
                         text_response("Wrote colsum.py."), text_response("Wrote colsum.py.")])
    (h.root / "sales.csv").write_text(CSV)
    await h.session.submit(TASK)
    assert not (h.root / "colsum.py").exists()
    assert [s.tool_name for s in h.of(ev.ToolCallStart)][:1] == ["read_file"]  # the reply's own call ran


async def test_an_existing_script_is_not_drafted_over(harness) -> None:
    h = harness("text", [text_response("It is already there."), text_response("It is already there.")])
    (h.root / "colsum.py").write_text("print('mine')\n")
    await h.session.submit(TASK)
    assert (h.root / "colsum.py").read_text() == "print('mine')\n"
    assert len(h.adapter.requests) >= 1 and all(r.tools or len(r.messages) > 1 for r in h.adapter.requests)


async def test_the_write_goes_through_the_policy(harness) -> None:
    async def no_writes(call: Any, env: Any) -> Decision:
        return Decision.deny("no new files") if call.name == "write_file" else Decision.allow()

    h = harness("text", [text_response(""), text_response(DRAFT)] + [text_response("I could not write it.")] * 4)
    h.session.policy = no_writes
    await h.session.submit(TASK)
    assert not (h.root / "colsum.py").exists()
    (denied,) = [e for e in h.of(ev.ToolCallEnd) if e.tool_name == "write_file"]
    assert denied.is_error and "no new files" in (denied.error or "")


async def test_a_cloud_session_is_left_alone(harness) -> None:
    h = harness("anthropic", [text_response("Sure.")])
    assert await h.session.submit(TASK) == "Sure."
    assert not (h.root / "colsum.py").exists() and len(h.adapter.requests) == 1


def test_what_counts_as_a_new_script_asked_for() -> None:
    assert wanted_script(TASK) == "colsum.py"
    assert wanted_script("Create hello.py that prints hello, then run it.") == "hello.py"
    assert wanted_script("Write a bash script `count.sh` that counts files by extension.") == "count.sh"
    assert wanted_script("Fix the bug in app.py so that tests pass.") is None
    assert wanted_script("Write a script a.py that calls b.py, then write a script b.py.") is None  # two


@given(st.text(max_size=200))
def test_a_draft_is_a_fenced_block_that_parses_or_nothing(text: str) -> None:
    found = drafted_script(text, "x.py")
    if found is not None:
        compile(found, "x.py", "exec")
        assert found.endswith("\n") and found.rstrip("\n") in text
