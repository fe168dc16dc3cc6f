#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
echo requests==2.31.0 >> requirements.txt
