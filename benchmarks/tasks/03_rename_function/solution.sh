#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/calc_total/compute_total/g' shop.py main.py
