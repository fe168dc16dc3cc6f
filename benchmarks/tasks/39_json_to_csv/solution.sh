#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
cat > json2csv.py <<'PY'
import csv
import json
import sys

with open(sys.argv[1], encoding="utf-8") as handle:
    records = json.load(handle)
out = open(sys.stdout.fileno(), "w", encoding="utf-8", newline="", closefd=False)
writer = csv.DictWriter(out, fieldnames=list(records[0]))
writer.writeheader()
writer.writerows(records)
out.flush()
PY
