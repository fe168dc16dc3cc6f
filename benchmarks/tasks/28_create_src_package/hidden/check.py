"""src/inventory is a package with __version__ "0.1.0"; `python3 -m inventory` prints its version,
read from __version__ (a copy with another version prints that one)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def run(ws: Path) -> str:
    env = dict(os.environ, PYTHONPATH="src")
    done = subprocess.run([sys.executable, "-m", "inventory"], cwd=ws, env=env, capture_output=True,
                          text=True, timeout=20)
    return done.stdout.strip() if done.returncode == 0 else ""


ws = Path.cwd()
init = ws / "src" / "inventory" / "__init__.py"
if not init.is_file() or not (ws / "src" / "inventory" / "__main__.py").is_file():
    sys.exit(1)
text = init.read_text()
if not re.search(r'^__version__\s*=\s*["\']0\.1\.0["\']', text, re.M) or run(ws) != "inventory 0.1.0":
    sys.exit(1)
with tempfile.TemporaryDirectory() as tmp:
    copy = Path(tmp) / "ws"
    shutil.copytree(ws, copy)
    (copy / "src" / "inventory" / "__init__.py").write_text(text.replace("0.1.0", "7.3.1"))
    sys.exit(0 if run(copy) == "inventory 7.3.1" else 1)
