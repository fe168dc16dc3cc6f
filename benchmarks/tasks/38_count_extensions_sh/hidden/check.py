"""bash count_ext.sh DIR on directories made here, with sub-directories whose files do not count."""

import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

rng = random.Random(38)
with tempfile.TemporaryDirectory() as tmp:
    for case in range(12):
        folder = Path(tmp) / f"case {case}"  # a space in the path, as in real folders
        (folder / "sub.d").mkdir(parents=True)
        exts = rng.sample(["py", "md", "txt", "csv", "jpg", "png", "json", "sh"], rng.randint(1, 6))
        files = {f"f{i}.{rng.choice(exts)}" for i in range(rng.randint(1, 25))}
        for name in files:
            (folder / name).write_text(name)
        for i in range(3):
            (folder / "sub.d" / f"deep{i}.{rng.choice(exts)}").write_text("x")
        counts = Counter(name.rsplit(".", 1)[1] for name in files)
        done = subprocess.run(["bash", "count_ext.sh", str(folder)], capture_output=True, text=True, timeout=20)
        got = [line.split() for line in done.stdout.splitlines() if line.strip()]
        if done.returncode != 0 or got != [[ext, str(counts[ext])] for ext in sorted(counts)]:
            sys.exit(1)
