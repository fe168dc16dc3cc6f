#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/len(values) - n + 1:/len(values) - n:/' stats.py
