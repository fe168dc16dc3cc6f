"""Issue 23's SIGKILL campaign for ``codeloop relay step``, CI size (the 50-trial run is
benchmarks/relay_kill_campaign.py): the real command killed at random points of a step whose
reply holds file writes, edits and shell appends, then stepped again as a new process; no
command applied twice, none lost, the next outbox complete (tests/relay/relay_kill_campaign.py
says what each count means)."""

from __future__ import annotations

from pathlib import Path

import pytest
from relay_kill_campaign import run_campaign

pytestmark = pytest.mark.slow


def test_relay_step_sigkilled_then_stepped_again_applies_nothing_twice_and_loses_nothing(tmp_path: Path) -> None:
    campaign = run_campaign(tmp_path, 4, commands=6, seed=23)
    totals = campaign.totals()
    details = "\n".join(t.summary() for t in campaign.trials)
    assert totals["killed"] >= 1 and totals["mid_apply"] >= 1, details
    assert totals["lost"] == 0 and totals["duplicated"] == 0 and totals["problems"] == 0, details
    # Every command has its result once: completed, or a command cut by the kill, reported and not re-run.
    assert totals["completed"] + totals["interrupted"] == 4 * 3 * 6, details
