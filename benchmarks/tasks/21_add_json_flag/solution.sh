#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
python3 - <<'PY'
from pathlib import Path
p = Path("wordcount.py")
s = p.read_text()
s = s.replace('import argparse\n', 'import argparse\nimport json\n')
s = s.replace('    args = parser.parse_args()\n',
              '    parser.add_argument("--json", action="store_true", help="print one JSON object")\n'
              '    args = parser.parse_args()\n')
s = s.replace('    print(f"lines: {lines}")',
              '    if args.json:\n'
              '        print(json.dumps({"lines": lines, "words": words, "chars": chars}))\n'
              '        return\n'
              '    print(f"lines: {lines}")')
p.write_text(s)
PY
