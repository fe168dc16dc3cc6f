"""slugify is defined in text.py (same behaviour), not in helpers.py; blog.py and feed.py import it
from text and print what they printed."""

import re
import subprocess
import sys
from pathlib import Path


def run(script: str) -> str:
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=20)
    return done.stdout if done.returncode == 0 else ""


def reference(title: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", title.lower()))


ws = Path.cwd()
sys.path.insert(0, str(ws))
import helpers  # noqa: E402
import text  # noqa: E402

if "def slugify" in (ws / "helpers.py").read_text() or not hasattr(helpers, "format_date"):
    sys.exit(1)
if "def slugify" not in (ws / "text.py").read_text():
    sys.exit(1)
from_helpers = re.compile(r"^from\s+helpers\s+import\s+[^\n]*\bslugify\b|\bhelpers\.slugify\b", re.M)
if any(from_helpers.search((ws / name).read_text()) for name in ("blog.py", "feed.py")):
    sys.exit(1)
for title in ["Hello, World!", "  Spaces   everywhere ", "C++ & Rust: 2 Langs", "ÄÖ ok", "", "already-a-slug"]:
    if text.slugify(title) != reference(title):
        sys.exit(1)
blog = ("/posts/why-we-moved-to-python-3-12.html  15 January 2024  Why We Moved to Python 3.12\n"
        "/posts/ten-tips-faster-ci.html  2 February 2024  Ten Tips: Faster CI!\n")
feed = ("<item><link>https://example.org/posts/release-notes-2-0.html</link></item>\n"
        "<item><link>https://example.org/posts/q-a-with-the-team.html</link></item>\n")
sys.exit(0 if run("blog.py") == blog and run("feed.py") == feed else 1)
