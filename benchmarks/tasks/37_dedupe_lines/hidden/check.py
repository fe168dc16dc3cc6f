"""dedupe.py on inputs made here: repeats near and far, and lines that differ only in case or in
leading spaces (different lines)."""

import os
import random
import subprocess
import sys

rng = random.Random(37)
pool = ["alpha", "Alpha", "beta", "  beta", "gamma", "x", "42", "a b c", "ünïcode", "delta", "é"]
env = dict(os.environ, PYTHONIOENCODING="utf-8")
for case in range(20):
    lines = [rng.choice(pool[: rng.randint(1, len(pool))]) for _ in range(rng.randint(0, 60))]
    want = "".join(f"{line}\n" for line in dict.fromkeys(lines))
    done = subprocess.run([sys.executable, "dedupe.py"], input="".join(f"{line}\n" for line in lines),
                          capture_output=True, encoding="utf-8", env=env, timeout=20)
    if done.returncode != 0 or done.stdout.strip("\n") != want.strip("\n"):
        sys.exit(1)
