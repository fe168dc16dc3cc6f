"""ci.yml, read line by line (no YAML parser in a plain python3): python-version is 3.11 on the same
line, and every other line is as it was."""

import re
import sys
from pathlib import Path

NAME = ".github/workflows/ci.yml"
try:
    lines = [line.rstrip() for line in Path(NAME).read_text().rstrip("\n").split("\n")]
except OSError:
    sys.exit(1)
setup = Path(__file__).resolve().parents[1] / "setup"
orig = [line.rstrip() for line in (setup / NAME).read_text().rstrip("\n").split("\n")]
target = orig.index('          python-version: "3.8"')
ok = len(lines) == len(orig) and re.fullmatch(r"          python-version: (['\"]?)3\.11\1", lines[target])
ok = ok and all(new == old for i, (new, old) in enumerate(zip(lines, orig)) if i != target)
ok = ok and Path("pyproject.toml").read_text() == (setup / "pyproject.toml").read_text()
sys.exit(0 if ok else 1)
