""".env.example: the lines it had, in order, plus one KEY=value line for each variable settings.py
reads that was missing; no other keys, none twice."""

import re
import sys
from pathlib import Path

try:
    lines = [line.strip() for line in Path(".env.example").read_text().splitlines() if line.strip()]
except OSError:
    sys.exit(1)
orig = [line.strip() for line in
        (Path(__file__).resolve().parents[1] / "setup" / ".env.example").read_text().splitlines() if line.strip()]
if [line for line in lines if line in orig] != orig:
    sys.exit(1)
keys = []
for line in lines:
    if line.startswith("#"):
        continue
    match = re.fullmatch(r"(?:export\s+)?([A-Z_][A-Z0-9_]*)\s*=.*", line)
    if not match:
        sys.exit(1)
    keys.append(match.group(1))
want = ["DATABASE_URL", "LOG_LEVEL", "REDIS_URL", "SECRET_KEY", "APP_WORKERS"]
sys.exit(0 if sorted(keys) == sorted(want) else 1)
