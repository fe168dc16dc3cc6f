"""metrics.py is gone and no .py file mentions it; app.py and worker.py print their own lines as
before (the metrics line aside); process() still picks the same orders."""

import random
import re
import subprocess
import sys
from pathlib import Path


def run(script: str) -> str | None:
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=20)
    return done.stdout if done.returncode == 0 else None


ws = Path.cwd()
if (ws / "metrics.py").exists():
    sys.exit(1)
if any(re.search(r"\bmetrics\b|(?<![.\w])count\(", p.read_text()) for p in ws.rglob("*.py")):
    sys.exit(1)
if run("app.py") != "processed 2 of 3 orders\n" or run("worker.py") != "[7]\n":
    sys.exit(1)
sys.path.insert(0, str(ws))
from worker import process  # noqa: E402

rng = random.Random(33)
for _ in range(50):
    orders = [{"id": i, "qty": rng.randint(-2, 3)} for i in range(rng.randint(0, 10))]
    if process(orders) != [o["id"] for o in orders if o["qty"] > 0]:
        sys.exit(1)
