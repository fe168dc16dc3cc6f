"""Issue 23's SIGKILL campaign for ``codeloop spaces serve`` at benchmark scale, on SQLite and
on PostgreSQL (a throw-away cluster this script starts; skipped with a reason when the
PostgreSQL server binaries are missing).

Each trial creates a space on the real server, drives ``--runs`` runs of ``--ops`` operations
(file writes, shell appends, shell appends that need approval, approved through the API)
while following them over SSE, SIGKILLs the server after a random number of received events,
restarts it on the same store, reconnects and checks (tests/spaces/spaces_kill_campaign.py).
Prints one line per trial, then the totals per backend: lost events (sent to the client, then
missing from the replay), lost effects, duplicated (an operation's effect twice), interrupted
(the operation a killed run stopped at, reported, not re-run) and other problems. Exits 1 when
anything was lost, duplicated or inconsistent.

    PYTHONPATH=src .venv/bin/python benchmarks/spaces_kill_campaign.py [--trials 50] [--backend both]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from spaces.postgres_cluster import PostgresUnavailableError, create_database, postgres_cluster
from spaces.spaces_kill_campaign import run_campaign


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ops", type=int, default=5)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    args = parser.parse_args()
    bad = 0
    with contextlib.ExitStack() as stack:
        backends: list[tuple[str, str | None]] = []
        if args.backend in ("sqlite", "both"):
            backends.append(("sqlite", None))
        if args.backend in ("postgresql", "both"):
            try:
                backends.append(("postgresql", create_database(stack.enter_context(postgres_cluster()))))
            except PostgresUnavailableError as exc:
                print(f"postgresql: skipped: {exc}")
                bad = bad or args.backend == "postgresql"
        for name, database in backends:
            started = time.monotonic()
            with tempfile.TemporaryDirectory(prefix=f"spaces-kill-{name}-") as tmp:
                print(f"--- {name}", flush=True)
                campaign = run_campaign(Path(tmp), args.trials, database=database, runs=args.runs,
                                        ops_per_run=args.ops, seed=args.seed, progress=True)
            totals = campaign.totals()
            print(f"{name}: {args.trials} trials x {args.runs} runs x {args.ops} ops, seed {args.seed}, "
                  f"{time.monotonic() - started:.0f} s:")
            print("  " + ", ".join(f"{key} {value}" for key, value in totals.items()), flush=True)
            bad = bad or totals["lost_events"] or totals["lost"] or totals["duplicated"] or totals["problems"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
