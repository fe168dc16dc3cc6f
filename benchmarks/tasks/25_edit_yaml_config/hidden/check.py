"""config.yaml, read line by line (no YAML parser in a plain python3): the two values changed in
place, under the right section, and every other line (comments included) as it was."""

import re
import sys
from pathlib import Path

try:
    lines = [line.rstrip() for line in Path("config.yaml").read_text().rstrip("\n").split("\n")]
except OSError:
    sys.exit(1)
orig = [line.rstrip() for line in
        (Path(__file__).resolve().parents[1] / "setup" / "config.yaml").read_text().rstrip("\n").split("\n")]
changed = {
    orig.index("  port: 5432          # PgBouncer listens elsewhere"): r"  port: ['\"]?6432['\"]?(\s+#.*)?",
    orig.index("  level: info"): r"  level: ['\"]?debug['\"]?(\s+#.*)?",
}
ok = len(lines) == len(orig)
for i, (new, old) in enumerate(zip(lines, orig)):
    ok = ok and (re.fullmatch(changed[i], new) is not None if i in changed else new == old)
sys.exit(0 if ok else 1)
