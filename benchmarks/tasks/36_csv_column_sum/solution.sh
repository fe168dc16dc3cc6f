#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
cat > colsum.py <<'PY'
import csv
import sys

path, column = sys.argv[1], sys.argv[2]
with open(path, newline="") as handle:
    print(sum(int(row[column]) for row in csv.DictReader(handle)))
PY
