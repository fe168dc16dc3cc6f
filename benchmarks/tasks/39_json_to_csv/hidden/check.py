"""json2csv.py on JSON files made here; the output read back with the csv module must give the keys
(first object's order) and every value as text."""

import csv
import io
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

rng = random.Random(39)
values = [0, 7, -3, 1234567, "plain", "with, comma", 'a "quoted" word', "", "Zoë"]
with tempfile.TemporaryDirectory() as tmp:
    for case in range(12):
        keys = rng.sample(["id", "name", "email", "score", "team", "note"], rng.randint(1, 6))
        records = [{k: rng.choice(values) for k in keys} for _ in range(rng.randint(1, 10))]
        records = [dict(rng.sample(list(r.items()), len(r))) if i else r for i, r in enumerate(records)]
        path = Path(tmp) / f"in{case}.json"
        path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
        done = subprocess.run([sys.executable, "json2csv.py", str(path)], capture_output=True, timeout=20)
        try:
            rows = [row for row in csv.reader(io.StringIO(done.stdout.decode("utf-8"))) if row]
        except (UnicodeDecodeError, csv.Error):
            sys.exit(1)
        want = [keys, *[[str(r[k]) for k in keys] for r in records]]
        if done.returncode != 0 or rows != want:
            sys.exit(1)
