"""No Acct left in any .py file; bank.Account behaves as Acct did; main.py prints the same (with the
new class name in the repr)."""

import re
import subprocess
import sys
from pathlib import Path

ws = Path.cwd()
if any(re.search(r"\bAcct\b", p.read_text()) for p in ws.rglob("*.py")):
    sys.exit(1)
done = subprocess.run([sys.executable, "main.py"], capture_output=True, text=True, timeout=20)
if done.stdout != "True False\n[Account('ann', 70), Account('bo', 30)] Account('ann-savings', 500)\n":
    sys.exit(1)
sys.path.insert(0, str(ws))
from bank import Account, InsufficientFunds  # noqa: E402
from transfer import open_accounts, transfer  # noqa: E402

accounts = open_accounts(["x", "y"])
if not all(type(a) is Account for a in accounts.values()):
    sys.exit(1)
a, b = Account("a", 10), Account("b")
ok = transfer(a, b, 10) and (a.balance, b.balance) == (0, 10) and not transfer(a, b, 1)
try:
    a.withdraw(5)
    ok = False
except InsufficientFunds:
    pass
sys.exit(0 if ok else 1)
