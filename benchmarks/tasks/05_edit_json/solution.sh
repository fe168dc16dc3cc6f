#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
python3 -c 'import json; d=json.load(open("settings.json")); d["port"]=8080; json.dump(d, open("settings.json","w"), indent=2)'
