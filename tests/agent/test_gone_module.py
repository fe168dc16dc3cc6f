"""Issue 20: a Python module the task deletes is gone while other files still use it (seen
with the 1.5B model on dev task 33: metrics.py removed, app.py written back with
`import metrics` and its calls, then one import line replaced by `pass`). Statements that only
serve the gone module are removed through the pipeline; other uses are pointed out.
Small-model sessions only."""

from __future__ import annotations

import ast
import subprocess
import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.guards.gone_module import uses, without_module
from codeloop.llm.adapters.scripted import text_response
from codeloop.policy.model import Decision

from .agent_harness import calls

TASK = ("We don't need stats.py any more. Delete it and remove its import and every use of it "
        "from shop.py and jobs.py; both scripts must still run.")
STATS = "TOTAL = []\n\n\ndef note(x):\n    TOTAL.append(x)\n\n\ndef report():\n    return f'notes: {TOTAL}'\n"
SHOP = ("import stats\nfrom jobs import run\n\n\ndef main():\n    stats.note('start')\n    done = run([1, 0, 3])\n"
        "    print(f'ran {len(done)}')\n    print(stats.report())\n\n\nif __name__ == '__main__':\n    main()\n")
JOBS = ("from stats import note\n\n\ndef run(items):\n    kept = []\n    for item in items:\n        if not item:\n"
        "            note('skip')\n            continue\n        kept.append(item)\n    return kept\n\n\n"
        "if __name__ == '__main__':\n    print(run([0, 2]))\n")
RM = ("shell", {"command": "rm -- stats.py"})


def _project(root) -> None:
    (root / "stats.py").write_text(STATS)
    (root / "shop.py").write_text(SHOP)
    (root / "jobs.py").write_text(JOBS)


def _run(root, script: str) -> str:
    done = subprocess.run([sys.executable, script], cwd=root, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_the_uses_of_a_deleted_module_go_and_both_scripts_still_run(harness) -> None:
    claim = "Deleted stats.py and removed its import and uses from shop.py and jobs.py."
    h = harness("text", [calls("text", RM), text_response(claim), text_response(claim), text_response(claim),
                         text_response(claim), text_response(claim)])
    _project(h.root)
    await h.session.submit(TASK)
    assert not (h.root / "stats.py").exists()
    assert _run(h.root, "shop.py") == "ran 2\n" and _run(h.root, "jobs.py") == "[2]\n"
    for name in ("shop.py", "jobs.py"):
        assert "stats" not in (h.root / name).read_text() and "note(" not in (h.root / name).read_text()
    made = [s for s in h.of(ev.ToolCallStart) if s.call_id.startswith("unused-")]
    assert sorted(s.arguments["file_path"] for s in made) == ["jobs.py", "shop.py"]
    assert all(s.tool_name == "edit_file" for s in made)
    assert sum(w.code == "verify" and "still uses it" in w.message for w in h.of(ev.WarningEvent)) == 2


async def test_a_use_inside_a_kept_statement_is_pointed_out_not_rewritten(harness) -> None:
    h = harness("text", [calls("text", RM), text_response("Done."), text_response("Done."), text_response("Done."),
                         text_response("Done.")])
    _project(h.root)
    kept = "import stats\n\nsummary = stats.report()\nprint(summary)\n"
    (h.root / "shop.py").write_text(kept)
    (h.root / "jobs.py").write_text("print(1)\n")
    await h.session.submit(TASK)
    assert (h.root / "shop.py").read_text() == kept
    assert any("shop.py still uses it (lines 1, 3)" in s.content for s in h.of(ev.SteeringInjected))


async def test_nothing_happens_while_the_module_is_still_there(harness) -> None:
    h = harness("text", [text_response("Done.")])
    _project(h.root)
    await h.session.submit(TASK)
    assert (h.root / "shop.py").read_text() == SHOP and not h.of(ev.ToolCallStart)


async def test_a_task_that_moves_code_is_told_not_rewritten(harness) -> None:
    h = harness("text", [calls("text", RM), text_response("Done."), text_response("Done."), text_response("Done."),
                         text_response("Done.")])
    _project(h.root)
    await h.session.submit("Move note() from stats.py into jobs.py and delete stats.py.")
    assert (h.root / "shop.py").read_text() == SHOP
    assert any("still uses it" in s.content for s in h.of(ev.SteeringInjected))


async def test_the_change_goes_through_the_policy(harness) -> None:
    async def deny_writes(call: Any, env: Any) -> Decision:
        return Decision.deny("read-only today") if call.name == "edit_file" else Decision.allow()

    h = harness("text", [calls("text", RM)] + [text_response("Done.")] * 5)
    h.session.policy = deny_writes
    _project(h.root)
    await h.session.submit(TASK)
    assert (h.root / "shop.py").read_text() == SHOP and (h.root / "jobs.py").read_text() == JOBS


async def test_a_cloud_session_is_left_alone(harness) -> None:
    h = harness("anthropic", [calls("anthropic", RM), text_response("Done."), text_response("Done."),
                              text_response("Done.")])
    _project(h.root)
    assert await h.session.submit(TASK) == "Done."
    assert (h.root / "shop.py").read_text() == SHOP


def test_what_counts_as_a_use() -> None:
    assert uses(SHOP, "stats") == [1, 6, 9]
    assert uses(JOBS, "stats") == [1, 8]
    assert uses("import statistics\nstatistics.mean([1])\n", "stats") == []
    assert uses("def broken(:\n", "stats") is None
    assert without_module("import stats, os\nprint(os.sep)\n", "stats") is None  # one import, two modules
    assert without_module("import stats; print(1)\n", "stats") is None  # statements sharing a line
    assert without_module("import stats\nsummary = stats.report()\n", "stats") is None  # a use that stays
    assert without_module("import stats\nif x:\n    stats.note(1)\nprint(x)\n", "stats") == "if x:\n    pass\nprint(x)\n"


_STATEMENTS = st.sampled_from([
    "import stats", "from stats import note", "import os", "stats.note(1)", "note(2)", "print(stats.report())",
    "x = 1", "print(x)", "y = stats.report()", "pass", "if x:\n    stats.note(3)", "def f():\n    note(4)",
    "for i in range(2):\n    print(i)\n    stats.note(i)",
])


@settings(max_examples=300)
@given(st.lists(_STATEMENTS, max_size=8))
def test_what_is_left_parses_keeps_the_other_lines_in_order_and_never_uses_the_module(parts: list[str]) -> None:
    source = "x = 0\n" + "\n".join(parts) + "\n"
    result = without_module(source, "stats")
    if result is None:
        return
    ast.parse(result)
    bound = {"stats"} if "import stats" in parts else set()
    bound |= {"note"} if "from stats import note" in parts else set()
    assert uses(result, "stats") == []
    assert not [n.id for n in ast.walk(ast.parse(result)) if isinstance(n, ast.Name) and n.id in bound]
    original = iter(source.splitlines())
    for line in result.splitlines():  # every line is the source's, in order, or an added `pass`
        if line.strip() == "pass" and line not in source.splitlines():
            continue
        assert any(line == other for other in original)
