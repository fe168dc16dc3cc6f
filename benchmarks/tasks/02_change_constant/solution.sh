#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/^MAX_RETRIES = 3$/MAX_RETRIES = 5/' config.py
