"""join_fields takes sep (default ","); export.py uses ";", report.py still ","."""

import random
import subprocess
import sys
from pathlib import Path


def run(script: str) -> str:
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=20)
    return done.stdout if done.returncode == 0 else ""


ws = Path.cwd()
sys.path.insert(0, str(ws))
from textutils import clean, join_fields  # noqa: E402

rng = random.Random(14)
for _ in range(50):
    fields = [rng.choice([None, rng.randint(-9, 99), " x ", "word", ""]) for _ in range(rng.randint(1, 6))]
    sep = rng.choice(["|", "\t", " - ", ";"])
    if join_fields(fields) != ",".join(clean(f) for f in fields):
        sys.exit(1)
    if join_fields(fields, sep=sep) != sep.join(clean(f) for f in fields):
        sys.exit(1)
    if join_fields(fields, sep) != sep.join(clean(f) for f in fields):
        sys.exit(1)
ok = run("export.py") == "id;name;city\n1;Ada;London\n2;Linus;\n3;Grace;Arlington\n"
ok = ok and run("report.py") == "region,total\neast,143\nnorth,120\nsouth,95\n"
sys.exit(0 if ok else 1)
