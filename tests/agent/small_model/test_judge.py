"""Judging a candidate (issue 33): every check found in the workspace, the commands run as
``shell`` calls through the pipeline in the scratch overlay (real bubblewrap 0.10+; skipped,
saying so, with an older one), the user's files untouched; a denied check fails and says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codeloop.agent.small_model.checks import Check
from codeloop.agent.small_model.choose import Candidate, choose
from codeloop.agent.small_model.judge import judge, run_command_checks
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.environments.sandbox import find_bwrap, supports_overlay
from codeloop.environments.scratch import ScratchExecutionEnvironment
from codeloop.policy.model import Decision
from codeloop.tools.tool_events import ToolCallStarted, ToolEvent

BWRAP = find_bwrap()
PROJECT = {
    "stats.py": "def last_n(xs, n):\n    return xs[-n - 1:]\n",
    "test_stats.py": "from stats import last_n\n\nassert last_n([1, 2, 3, 4, 5], 2) == [4, 5]\nprint('ok')\n",
    "report.py": "from stats import last_n\nprint(last_n([1, 2, 3], 1))\n",
}
GOOD = {"stats.py": "def last_n(xs, n):\n    return xs[-n:]\n"}
BAD = {"stats.py": "def last_n(xs, n):\n    return xs[n:]\n"}
RENAMED = {"stats.py": "def tail(xs, n):\n    return xs[-n:]\n"}


def workspace(root: Path) -> Path:
    for path, text in PROJECT.items():
        (root / path).write_text(text)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.skipif(BWRAP is None or not supports_overlay(BWRAP),
                    reason=f"bubblewrap {BWRAP} has no --overlay (needs 0.10 or later)")
async def test_candidates_are_judged_in_the_overlay_and_the_checked_one_is_chosen(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    before = snapshot(ws)
    events: list[ToolEvent] = []
    candidates = []
    for index, changes in enumerate([BAD, RENAMED, GOOD, {}]):
        env = ScratchExecutionEnvironment(ws)
        await env.initialize()
        try:
            await env.stage(changes)
            results = await judge(env, PROJECT, changes, ran=["python3 report.py"],
                                  on_event=events.append)
        finally:
            await env.cleanup()
        candidates.append(Candidate(index, changes, tuple(results)))
    assert snapshot(ws) == before
    bad, renamed, good, nothing = candidates
    assert [(r.check.name, r.passed) for r in good.results] == [
        ("parse stats.py", True), ("project imports resolve", True), ("tests test_stats.py", True),
        ("again: python3 report.py", True)]
    assert [(r.check.name, r.passed) for r in bad.results][2] == ("tests test_stats.py", False)
    assert "AssertionError" in bad.results[2].output
    assert [r.passed for r in renamed.results][:2] == [True, False]  # the imports of last_n broke
    assert nothing.results == ()
    assert choose(candidates) is good
    # Each command ran as a shell call through the pipeline, announced like any other.
    assert [e.arguments["command"] for e in events if isinstance(e, ToolCallStarted)][:2] == [
        "python3 test_stats.py", "python3 report.py"]


async def test_a_check_the_policy_denies_does_not_run_and_fails_saying_why(tmp_path: Path) -> None:
    ws = workspace(tmp_path)

    async def deny(call: Any, env: Any) -> Decision:
        return Decision.deny("checks need approval here")

    env = LocalExecutionEnvironment(ws)
    check = Check("script", "again: touch ran.txt", "touch ran.txt", True)
    [result] = await run_command_checks(env, [check], policy=deny)
    assert not result.passed and "checks need approval here" in result.output
    assert not (ws / "ran.txt").exists()
    [result] = await run_command_checks(env, [check])
    assert result.passed and (ws / "ran.txt").exists()
