"""Issue 23's SIGKILL campaign for ``codeloop spaces serve``, CI size, on SQLite and on
PostgreSQL (the 50-trial runs are benchmarks/spaces_kill_campaign.py): the real server killed
while a client drives runs with approvals, restarted on the same store, the client
reconnected, and what it was sent compared with the replayed streams and the workspace
(tests/spaces/spaces_kill_campaign.py says what each count means)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .spaces_kill_campaign import Campaign, run_campaign

pytestmark = pytest.mark.slow


def _assert_nothing_lost_or_duplicated(campaign: Campaign) -> None:
    totals = campaign.totals()
    details = "\n".join(t.summary() for t in campaign.trials)
    assert totals["killed"] >= 1, details
    assert totals["lost_events"] == 0 and totals["lost"] == 0 and totals["duplicated"] == 0, details
    assert totals["problems"] == 0, details
    # Every run the client created is accounted for: completed, or reported interrupted.
    assert totals["completed_runs"] + totals["interrupted_runs"] == totals["runs"], details


def test_sigkilled_sqlite_server_loses_no_event_and_runs_no_approved_operation_twice(tmp_path: Path) -> None:
    _assert_nothing_lost_or_duplicated(run_campaign(tmp_path, 3, seed=23))


def test_sigkilled_postgresql_server_loses_no_event_and_runs_no_approved_operation_twice(
        tmp_path: Path, fresh_postgres: str) -> None:
    _assert_nothing_lost_or_duplicated(run_campaign(tmp_path, 3, database=fresh_postgres, seed=23))
