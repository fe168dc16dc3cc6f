#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
python3 - <<'PY'
from pathlib import Path
p = Path("todo.py")
s = p.read_text()
s = s.replace('    args = parser.parse_args(argv)\n',
              '    parser.add_argument("--limit", type=int, help="show at most this many items")\n'
              '    args = parser.parse_args(argv)\n')
s = s.replace('    for number, text in enumerate(shown, 1):',
              '    if args.limit is not None:\n        shown = shown[: args.limit]\n'
              '    for number, text in enumerate(shown, 1):')
p.write_text(s)
PY
