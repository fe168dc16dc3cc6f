#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/    return year % 4 == 0$/    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)/' dates.py
