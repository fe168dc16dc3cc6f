#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
python3 - <<'PY'
import json
with open("package.json") as f:
    d = json.load(f)
d["version"] = "2.1.0"
d["scripts"]["lint"] = "eslint src"
del d["dependencies"]["jquery"]
with open("package.json", "w") as f:
    json.dump(d, f, indent=2)
    f.write("\n")
PY
