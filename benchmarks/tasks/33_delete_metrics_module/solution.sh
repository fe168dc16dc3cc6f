#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
rm metrics.py
sed -i '/^import metrics$/d; /metrics\./d' app.py
sed -i '/^from metrics import count$/,+1d; /count("skipped")/d; /count("shipped")/d' worker.py
