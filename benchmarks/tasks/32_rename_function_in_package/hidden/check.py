"""get_usr is gone from every .py file; api.get_user and api.users.get_user work; the tests still
run (and still test it) and app.py prints what it did."""

import re
import subprocess
import sys
from pathlib import Path

ws = Path.cwd()
if any(re.search(r"\bget_usr\b", p.read_text()) for p in ws.rglob("*.py")):
    sys.exit(1)
if "get_user(" not in (ws / "tests" / "test_users.py").read_text():
    sys.exit(1)
tests = subprocess.run([sys.executable, "-m", "unittest", "discover", "tests"], capture_output=True, text=True,
                       timeout=60)
if tests.returncode != 0 or "Ran 2 tests" not in tests.stderr:
    sys.exit(1)
done = subprocess.run([sys.executable, "app.py"], capture_output=True, text=True, timeout=20)
if done.stdout != "Ada 2 1\n(200, {'id': 2, 'name': 'Linus', 'admin': False}) (404, None)\n":
    sys.exit(1)
sys.path.insert(0, str(ws))
import api  # noqa: E402
from api.users import get_user  # noqa: E402

ok = api.get_user is get_user and get_user(2) == {"id": 2, "name": "Linus", "admin": False}
sys.exit(0 if ok and get_user(0) is None else 1)
