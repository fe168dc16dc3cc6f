"""pyproject.toml parses; project.version is 1.4.0 and everything else (CHANGELOG.md too) is as it was."""

import sys
import tomllib
from pathlib import Path

try:
    data = tomllib.loads(Path("pyproject.toml").read_text())
except (OSError, ValueError):
    sys.exit(1)
setup = Path(__file__).resolve().parents[1] / "setup"
want = tomllib.loads((setup / "pyproject.toml").read_text())
want["project"]["version"] = "1.4.0"
changelog = Path("CHANGELOG.md")
same_log = changelog.is_file() and changelog.read_text() == (setup / "CHANGELOG.md").read_text()
sys.exit(0 if data == want and same_log else 1)
