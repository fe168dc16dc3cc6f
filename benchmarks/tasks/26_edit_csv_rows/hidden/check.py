"""inventory.csv parses as CSV: the header and every row but two exactly as before, B-204's price
19.99 (the rest of its row kept), C-310 gone."""

import csv
import sys
from pathlib import Path

try:
    with open("inventory.csv", newline="") as handle:
        rows = [row for row in csv.reader(handle) if row]
except (OSError, csv.Error):
    sys.exit(1)
with open(Path(__file__).resolve().parents[1] / "setup" / "inventory.csv", newline="") as handle:
    want = list(csv.reader(handle))
want = [row for row in want if row[0] != "C-310"]
for row in want:
    if row[0] == "B-204":
        row[3] = "19.99"
sys.exit(0 if rows == want else 1)
