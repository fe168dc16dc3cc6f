#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/(\\d)(\[hms\])/(\\d+)([hms])/' durations.py
