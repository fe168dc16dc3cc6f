#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i '/^C-310,/d; s/^B-204,Cordless drill,6,89.00,/B-204,Cordless drill,6,19.99,/' inventory.csv
