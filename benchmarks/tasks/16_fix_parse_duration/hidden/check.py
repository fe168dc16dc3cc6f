"""parse_duration on durations the test does not show."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from durations import format_duration, parse_duration  # noqa: E402

rng = random.Random(16)
for _ in range(200):
    h, m, s = rng.randint(0, 150), rng.randint(0, 59), rng.randint(0, 59)
    text = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s or not (h or m) else "")
    if parse_duration(text) != h * 3600 + m * 60 + s or parse_duration(text.upper()) != h * 3600 + m * 60 + s:
        sys.exit(1)
    if format_duration(h * 3600 + m * 60 + s) != text:
        sys.exit(1)
sys.exit(0 if parse_duration("100m") == 6000 and parse_duration("12h") == 43200 else 1)
