"""db.py is now database.py (same functions); nothing imports db; cli.py prints what it did."""

import re
import subprocess
import sys
from pathlib import Path

ws = Path.cwd()
if (ws / "db.py").exists() or not (ws / "database.py").is_file():
    sys.exit(1)
old_import = re.compile(r"^\s*(import\s+db\b|from\s+db\s+import\b)", re.M)
if any(old_import.search(p.read_text()) for p in ws.rglob("*.py")):
    sys.exit(1)
done = subprocess.run([sys.executable, "cli.py"], capture_output=True, text=True, timeout=20)
if done.stdout != "Ada Linus None\n[1, 2]\n":
    sys.exit(1)
sys.path.insert(0, str(ws))
import database  # noqa: E402

conn = database.connect("check")
database.insert(conn, "k", {"v": 1})
sys.exit(0 if database.fetch(conn, "k") == {"v": 1} and database.fetch(conn, "x") is None else 1)
