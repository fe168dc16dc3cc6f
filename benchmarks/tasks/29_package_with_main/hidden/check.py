"""`python3 -m mdstats FILE` prints what mdstats.py printed, on Markdown files made here;
mdstats.py is gone and mdstats/ is a package with __init__.py and __main__.py."""

import random
import subprocess
import sys
import tempfile
from pathlib import Path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=20)


ORIGINAL = str(Path(__file__).resolve().parents[1] / "setup" / "mdstats.py")  # what it did before
ws = Path.cwd()
if (ws / "mdstats.py").exists():
    sys.exit(1)
if not (ws / "mdstats" / "__init__.py").is_file() or not (ws / "mdstats" / "__main__.py").is_file():
    sys.exit(1)
rng = random.Random(29)
pieces = ["# Title", "## Part", "####### not a heading", "#nospace", "see [a](b) and [c](d)", "plain text",
          "```", "```python", "[x](y)", "", "- item [link](http://e.org)"]
with tempfile.TemporaryDirectory() as tmp:
    for case in range(15):
        text = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 25))) + "\n"
        path = Path(tmp) / f"doc{case}.md"
        path.write_text(text, encoding="utf-8")
        done, before = run("-m", "mdstats", str(path)), run(ORIGINAL, str(path))
        if done.returncode != 0 or done.stdout != before.stdout:
            sys.exit(1)
    usage = run("-m", "mdstats")
    sys.exit(0 if usage.returncode == 2 and not usage.stdout else 1)
