#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
python3 - <<'PY'
from pathlib import Path
p = Path("cleanup.py")
s = p.read_text()
s = s.replace('    args = parser.parse_args()\n',
              '    parser.add_argument("--dry-run", action="store_true", help="only list what would go")\n'
              '    args = parser.parse_args()\n')
s = s.replace('    for path in junk_files(args.folder):\n',
              '    for path in junk_files(args.folder):\n'
              '        if args.dry_run:\n'
              '            print(f"would remove {path.name}")\n'
              '            continue\n')
p.write_text(s)
PY
