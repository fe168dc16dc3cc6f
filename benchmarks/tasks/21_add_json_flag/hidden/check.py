"""wordcount.py with and without --json on files made here."""

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path


def run(*args: str) -> str | None:
    done = subprocess.run([sys.executable, "wordcount.py", *args], capture_output=True, text=True, timeout=20)
    return done.stdout if done.returncode == 0 else None


rng = random.Random(21)
with tempfile.TemporaryDirectory() as tmp:
    for case in range(15):
        text = "".join(rng.choice(["word ", "two  words ", "\n", "\n\n", "x\t", "ünï ", "."])
                       for _ in range(rng.randint(0, 60)))
        path = Path(tmp) / f"in{case}.txt"
        path.write_text(text, encoding="utf-8")
        lines, words, chars = len(text.splitlines()), len(text.split()), len(text)
        if run(str(path)) != f"lines: {lines}\nwords: {words}\nchars: {chars}\n":
            sys.exit(1)
        for args in (["--json", str(path)], [str(path), "--json"]):
            out = run(*args)
            try:
                data = json.loads(out or "")
            except ValueError:
                sys.exit(1)
            if data != {"lines": lines, "words": words, "chars": chars} or len(out.strip().splitlines()) > 5:
                sys.exit(1)
