"""pyproject.toml parses; requires-python and dependencies changed, every other key the same."""

import sys
import tomllib
from pathlib import Path

try:
    data = tomllib.loads(Path("pyproject.toml").read_text())
except (OSError, ValueError):
    sys.exit(1)
want = tomllib.loads((Path(__file__).resolve().parents[1] / "setup" / "pyproject.toml").read_text())
deps = data.get("project", {}).pop("dependencies", None)
want["project"]["requires-python"] = ">=3.10"
old = want["project"].pop("dependencies")
ok = data == want and isinstance(deps, list) and sorted(deps) == sorted([*old, "rich>=13"])
sys.exit(0 if ok else 1)
