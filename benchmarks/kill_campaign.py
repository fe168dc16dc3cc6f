"""Issue 23's SIGKILL campaign for ``codeloop run`` + ``--resume`` at benchmark scale.

Each trial starts the real ``codeloop run`` against a loopback scripted model asking for
``--steps`` tool calls (shell appends and file writes, each leaving a unique mark), SIGKILLs
it at a random point of its session log, resumes it with ``--resume ID "continue"`` to the
end, and compares the log with the workspace and the checkpoints
(tests/cli/kill_campaign.py). Prints one line per trial, then the totals: lost (a completed
call whose effect is missing), duplicated (an effect twice, or a completed call run again),
rerun (an interrupted call run again after the resume),
interrupted (started, cut by the kill, reported and not re-run), unreadable log lines and
other problems. Asserts nothing; exits 1 when anything was lost, duplicated or inconsistent.

    PYTHONPATH=src .venv/bin/python benchmarks/kill_campaign.py [--trials 100] [--steps 10] [--seed 23]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "cli"))
from kill_campaign import run_campaign


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kill-campaign-") as tmp:
        campaign = run_campaign(Path(tmp), args.trials, steps=args.steps, seed=args.seed, progress=True)
    totals = campaign.totals()
    print(f"{args.trials} trials x {args.steps} steps, seed {args.seed}, {time.monotonic() - started:.0f} s:")
    print("  " + ", ".join(f"{name} {value}" for name, value in totals.items()))
    bad = totals["lost"] or totals["duplicated"] or totals["rerun"] or totals["unreadable_lines"] or totals["problems"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
