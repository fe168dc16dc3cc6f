"""parse_size on sizes made here (all units, both cases, round trips through format_size)."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from units import format_size, parse_size  # noqa: E402

rng = random.Random(40)
if format_size(3 * 1024**2) != "3M" or format_size(1500) != "1500" or format_size(2048) != "2K":
    sys.exit(1)
for _ in range(300):
    number, power = rng.randint(0, 5000), rng.randint(0, 3)
    letter = ["", "K", "M", "G"][power]
    for text in (f"{number}{letter}", f"{number}{letter.lower()}"):
        if parse_size(text) != number * 1024**power:
            sys.exit(1)
    size = rng.choice([rng.randint(0, 10**12), rng.randint(1, 999) * 1024 ** rng.randint(0, 3)])
    if parse_size(format_size(size)) != size:
        sys.exit(1)
