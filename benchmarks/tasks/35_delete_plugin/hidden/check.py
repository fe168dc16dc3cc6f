"""plugins/rot13.py is gone and nothing mentions it; the other plugins still run through app.py."""

import random
import re
import string
import subprocess
import sys
from pathlib import Path

ws = Path.cwd()
if (ws / "plugins" / "rot13.py").exists() or not (ws / "plugins" / "__init__.py").is_file():
    sys.exit(1)
if any(re.search(r"rot13", p.read_text(), re.I) for p in ws.rglob("*.py")):
    sys.exit(1)
rng = random.Random(35)
words = ["".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(1, 8))) for _ in range(6)]
done = subprocess.run([sys.executable, "app.py", *words], capture_output=True, text=True, timeout=20)
want = "".join(f"reverse: {w[::-1]}\nshout: {w.upper()}!\n" for w in words)
sys.exit(0 if done.returncode == 0 and done.stdout == want else 1)
