"""colsum.py FILE COLUMN on CSV files made here: other column names, orders, signs and sizes."""

import csv
import random
import subprocess
import sys
import tempfile
from pathlib import Path

rng = random.Random(36)
with tempfile.TemporaryDirectory() as tmp:
    for case in range(15):
        numeric = rng.sample(["id", "price", "qty", "delta"], rng.randint(1, 4))
        columns = rng.sample([*numeric, "city", "note"], len(numeric) + 2)
        rows = [{c: (rng.randint(-1000, 10**6) if c in numeric else rng.choice(["Oslo", "a, b", "x"]))
                 for c in columns} for _ in range(rng.randint(1, 40))]
        path = Path(tmp) / f"data{case}.csv"
        with open(path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
        for column in numeric:
            done = subprocess.run([sys.executable, "colsum.py", str(path), column], capture_output=True,
                                  text=True, timeout=20)
            try:
                value = float(done.stdout.strip())
            except ValueError:
                sys.exit(1)
            if done.returncode != 0 or value != sum(row[column] for row in rows):
                sys.exit(1)
