"""Issue 23's SIGKILL campaign for ``codeloop run`` + ``--resume``, CI size (5 trials; the
100-trial run is benchmarks/kill_campaign.py): the real command killed at random points of
its session log, resumed to the end, and the log compared with the workspace and the
checkpoints (tests/cli/kill_campaign.py says what each count means)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kill_campaign import run_campaign

pytestmark = pytest.mark.slow


def test_five_sigkills_then_resume_lose_nothing_and_duplicate_nothing(tmp_path: Path) -> None:
    campaign = run_campaign(tmp_path, 5, steps=6, seed=23)
    totals = campaign.totals()
    details = "\n".join(t.summary() for t in campaign.trials)
    # A kill drawn near the end may land after the run exited (counted, not an error).
    assert totals["killed"] >= 1, details
    assert totals["lost"] == 0 and totals["duplicated"] == 0, details
    assert totals["unreadable_lines"] == 0 and totals["problems"] == 0, details
    # Every step is accounted for: completed once, or cut by the kill and not re-run.
    assert totals["completed_calls"] + totals["interrupted"] == 5 * 6, details
    assert totals["rerun"] == 0, details  # an interrupted call is reported, not run again
