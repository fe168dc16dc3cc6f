"""sort_versions and latest order by numbers on versions the tests do not show."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from versions import is_newer, latest, sort_versions  # noqa: E402


def key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


rng = random.Random(19)
for _ in range(200):
    versions = list({".".join(str(rng.choice([0, 1, 2, 9, 10, 11, 99, 100])) for _ in range(3))
                     for _ in range(rng.randint(1, 8))})
    rng.shuffle(versions)
    if sort_versions(list(versions)) != sorted(versions, key=key) or latest(versions) != max(versions, key=key):
        sys.exit(1)
    a, b = versions[0], versions[-1]
    if is_newer(a, b) != (key(a) > key(b)):
        sys.exit(1)
