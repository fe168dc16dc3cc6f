"""cleanup.py --dry-run lists and keeps; without it, deletes as before. Folders made here."""

import random
import subprocess
import sys
import tempfile
from pathlib import Path


def run(*args: str) -> list[str] | None:
    done = subprocess.run([sys.executable, "cleanup.py", *args], capture_output=True, text=True, timeout=20)
    return done.stdout.splitlines() if done.returncode == 0 else None


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


rng = random.Random(22)
with tempfile.TemporaryDirectory() as tmp:
    for case in range(8):
        folder = Path(tmp) / f"case{case}"
        (folder / "sub").mkdir(parents=True)
        names = {f"{rng.choice(['a', 'b', 'log', 'data'])}{i}{rng.choice(['.tmp', '.bak', '.txt', '.py', ''])}"
                 for i in range(rng.randint(0, 8))}
        for name in names:
            (folder / name).write_text(name)
        (folder / "sub" / "nested.tmp").write_text("keep")
        junk = sorted(n for n in names if n.endswith((".tmp", ".bak")))
        before = listing(folder)
        for args in (["--dry-run", str(folder)], [str(folder), "--dry-run"]):
            if run(*args) != [f"would remove {n}" for n in junk] or listing(folder) != before:
                sys.exit(1)
        if run(str(folder)) != [f"removed {n}" for n in junk]:
            sys.exit(1)
        if listing(folder) != [p for p in before if p not in junk]:
            sys.exit(1)
