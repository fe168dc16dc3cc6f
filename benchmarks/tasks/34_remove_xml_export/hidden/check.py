"""xml_export.py is gone and nothing mentions it; --format xml is refused; json and csv output are
what the original export.py printed, on record files made here."""

import json
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=20)


ws = Path.cwd()
original = Path(__file__).resolve().parents[1] / "setup"  # the export as it was, for reference
if (ws / "xml_export.py").exists():
    sys.exit(1)
if any(re.search(r"xml_export|to_xml", p.read_text()) for p in ws.rglob("*.py")):
    sys.exit(1)
rng = random.Random(34)
with tempfile.TemporaryDirectory() as tmp:
    for case in range(8):
        keys = rng.sample(["id", "name", "city", "score", "note"], rng.randint(1, 4))
        records = [{k: rng.choice([1, 2.5, "x", "a, b", 'say "hi"', ""]) for k in keys}
                   for _ in range(rng.randint(0, 5))]
        path = Path(tmp) / f"records{case}.json"
        path.write_text(json.dumps(records))
        for args in ([], ["--format", "json"], ["--format", "csv"]):
            done, before = run("export.py", str(path), *args), run(str(original / "export.py"), str(path), *args)
            if done.returncode != 0 or done.stdout != before.stdout:
                sys.exit(1)
    refused = run("export.py", str(path), "--format", "xml")
sys.exit(0 if refused.returncode != 0 and "<records>" not in refused.stdout else 1)
