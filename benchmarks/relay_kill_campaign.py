"""Issue 23's SIGKILL campaign for ``codeloop relay step`` at benchmark scale.

Each trial pastes a reply of ``--commands`` x 3 commands (file writes, an edit chain, shell
appends) into a fresh relay root, SIGKILLs the real ``codeloop relay step`` at a random point
(a random time, or a random number of step-journal lines), runs ``relay step`` again as a new
process and compares the next outbox with the workspace (tests/relay/relay_kill_campaign.py).
Prints one line per trial, then the totals: lost (a command reported OK whose effect is
missing), duplicated (an effect twice, an edit applied twice), interrupted (a command the kill
cut, reported and not re-run) and other problems. Exits 1 when anything was lost, duplicated
or inconsistent.

    PYTHONPATH=src .venv/bin/python benchmarks/relay_kill_campaign.py [--trials 50] [--commands 6] [--seed 23]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "relay"))
from relay_kill_campaign import run_campaign


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--commands", type=int, default=6)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="relay-kill-") as tmp:
        campaign = run_campaign(Path(tmp), args.trials, commands=args.commands, seed=args.seed, progress=True)
    totals = campaign.totals()
    print(f"{args.trials} trials x {3 * args.commands} commands, seed {args.seed}, "
          f"{time.monotonic() - started:.0f} s:")
    print("  " + ", ".join(f"{name} {value}" for name, value in totals.items()))
    return 1 if totals["lost"] or totals["duplicated"] or totals["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
