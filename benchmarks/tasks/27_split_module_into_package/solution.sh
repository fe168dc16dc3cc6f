#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
mkdir utils
python3 - <<'PY'
from pathlib import Path
src = Path("utils.py").read_text()
head, rest = src.split("# --- strings", 1)
strings, numbers = rest.split("# --- numbers", 1)
Path("utils/strings.py").write_text('"""String helpers."""\n\nimport re\n' + strings.split("\n", 1)[1])
Path("utils/numbers.py").write_text('"""Number helpers."""\n' + numbers.split("\n", 1)[1])
Path("utils/__init__.py").write_text(
    '"""Helpers used all over the project."""\n\n'
    "from utils.numbers import clamp, percent\nfrom utils.strings import slugify, truncate\n\n"
    '__all__ = ["clamp", "percent", "slugify", "truncate"]\n'
)
PY
rm utils.py
