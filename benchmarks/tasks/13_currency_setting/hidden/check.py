"""invoice.py and receipt.py print the currency of settings.CURRENCY after the amount."""

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def outputs(ws: Path) -> tuple[list[str], list[str]]:
    def run(script: str) -> list[str]:
        done = subprocess.run([sys.executable, script], cwd=ws, capture_output=True, text=True, timeout=20)
        return [line.rstrip() for line in done.stdout.strip().splitlines()] if done.returncode == 0 else []

    return run("invoice.py"), run("receipt.py")


def expected(cur: str) -> tuple[list[str], list[str]]:
    invoice = ["Corner Hardware", f"Keyboard   49.00 {cur}", f"Mouse      19.50 {cur}",
               f"Cable      4.25 {cur}", f"Total      87.30 {cur}"]
    return invoice, [f"Corner Hardware: paid 100.00 {cur}, change 12.70 {cur}"]


ws = Path.cwd()
settings = (ws / "settings.py").read_text()
ok = outputs(ws) == expected("EUR") and re.search(r'^CURRENCY\s*=\s*["\']EUR["\']\s*$', settings, re.M)
ok = ok and "TAX_RATE = 0.2" in settings and 'SHOP_NAME = "Corner Hardware"' in settings
if ok:  # both files take the currency from settings.py, not from a copy of it
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "ws"
        shutil.copytree(ws, copy)
        text = re.sub(r'^CURRENCY\s*=.*$', 'CURRENCY = "GBP"', settings, flags=re.M)
        (copy / "settings.py").write_text(text)
        ok = outputs(copy) == expected("GBP")
sys.exit(0 if ok else 1)
