"""Issue 40, tested for real at CI size: two replicas of ``codeloop spaces serve`` on one real
PostgreSQL, one SIGKILLed midway and restarted, the other SIGSTOPped past its lease and then
SIGCONTed, while clients send runs to both and watchers follow them over SSE
(tests/spaces/spaces_replicas.py says what each count means; the 200-run version is
benchmarks/spaces_replicas.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .server_process import ServerProcess
from .spaces_replicas import run_replicas

pytestmark = pytest.mark.slow


def test_two_replicas_killed_and_paused_run_no_operation_twice_and_lose_no_run_or_event(
        tmp_path: Path, fresh_postgres: str) -> None:
    report = run_replicas(tmp_path / "data", fresh_postgres, clients=4, runs=8, ops=3, lease_s=1.5)
    details = report.summary()
    assert report.duplicated == [] and report.lost == [], details
    assert report.lost_events == [] and report.problems == [], details
    # Every run the replicas stored is accounted for: completed, or reported interrupted.
    assert report.completed_runs + report.interrupted_runs == report.runs >= 4 * 8 - report.client_errors, details
    assert report.taken_over >= 1, details  # the kill or the pause left a run to take over
    assert report.events_received > 0, details


def test_a_second_server_on_one_sqlite_store_refuses_to_start(tmp_path: Path) -> None:
    first = ServerProcess(tmp_path / "data", "--no-auth").start()
    try:
        second = ServerProcess(tmp_path / "data", "--no-auth")
        with pytest.raises(RuntimeError) as refused:
            second.start()
        assert "is already served by codeloop spaces serve (pid" in str(refused.value)
        assert "postgresql://" in str(refused.value)
        first.stop()
        second.start().stop()  # the store is free again once its server stopped
    finally:
        first.stop()
