"""todo.py --limit N on todo files made here, with and without --done."""

import random
import subprocess
import sys
import tempfile
from pathlib import Path


def run(*args: str) -> str | None:
    done = subprocess.run([sys.executable, "todo.py", *args], capture_output=True, text=True, timeout=20)
    return done.stdout if done.returncode == 0 else None


rng = random.Random(20)
words = ["water plants", "email Bob", "fix bike", "file taxes", "read book", "clean desk", "walk dog"]
with tempfile.TemporaryDirectory() as tmp:
    for case in range(12):
        items = [(rng.random() < 0.4, f"{rng.choice(words)} {case}-{i}") for i in range(rng.randint(0, 9))]
        path = Path(tmp) / f"todo{case}.txt"
        path.write_text("# my list\n" + "".join(f"[{'x' if d else ' '}] {t}\n" for d, t in items))
        for done_flag in (False, True):
            shown = [t for d, t in items if d == done_flag]
            extra = ["--done"] if done_flag else []
            if run(str(path), *extra) != "".join(f"{n}. {t}\n" for n, t in enumerate(shown, 1)):
                sys.exit(1)
            for limit in (1, 2, 3, len(shown) + 2):
                want = "".join(f"{n}. {t}\n" for n, t in enumerate(shown[:limit], 1))
                if run(str(path), "--limit", str(limit), *extra) != want:
                    sys.exit(1)
                if run(*extra, f"--limit={limit}", str(path)) != want:
                    sys.exit(1)
