#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
python3 - <<'PY'
from pathlib import Path
src = Path("helpers.py").read_text()
start = src.index("def slugify")
end = src.index("def format_date")
Path("text.py").write_text('"""Text helpers."""\n\nimport re\n\n\n' + src[start:end].rstrip() + "\n")
src = src[:start] + src[end:]
src = src.replace("import re\n", "").replace("print(slugify(\"Hello, World!\"), ", "print(")
Path("helpers.py").write_text(src)
PY
sed -i 's/^from helpers import format_date, slugify$/from helpers import format_date\nfrom text import slugify/' blog.py
sed -i 's/^from helpers import slugify$/from text import slugify/' feed.py
