#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
printf '\n\ndef is_even(n):\n    return n %% 2 == 0\n' >> mathutils.py
