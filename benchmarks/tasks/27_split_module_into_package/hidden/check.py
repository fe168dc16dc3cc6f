"""utils is a package (utils/__init__.py) with strings.py and numbers.py; utils.py is gone; the
helpers live in the right module, behave as before, and main.py prints what it printed."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

ws = Path.cwd()
if (ws / "utils.py").exists() or not (ws / "utils" / "__init__.py").is_file():
    sys.exit(1)
env = dict(os.environ, PYTHONIOENCODING="utf-8")
done = subprocess.run([sys.executable, "main.py"], env=env, capture_output=True, encoding="utf-8",
                      timeout=20)
if done.stdout != "quarterly-report-q3 A very long…\n100 37.5\n":
    sys.exit(1)
sys.path.insert(0, str(ws))
strings = importlib.import_module("utils.strings")
numbers = importlib.import_module("utils.numbers")
utils = importlib.import_module("utils")
if not all(hasattr(strings, name) for name in ("slugify", "truncate")):
    sys.exit(1)
if not all(hasattr(numbers, name) for name in ("clamp", "percent")):
    sys.exit(1)
if any(hasattr(numbers, name) for name in ("slugify", "truncate")):
    sys.exit(1)
if "def slugify" not in (ws / "utils" / "strings.py").read_text():
    sys.exit(1)
if "def clamp" not in (ws / "utils" / "numbers.py").read_text():
    sys.exit(1)
ok = utils.truncate("abcdef", 4) == "abc…" and utils.truncate("abc", 4) == "abc"
ok = ok and utils.slugify("  Hello,   World 2!") == "hello-world-2" and utils.clamp(-5, 0, 10) == 0
ok = ok and utils.percent(1, 3) == 33.3 and utils.percent(1, 0) == 0.0
sys.exit(0 if ok else 1)
