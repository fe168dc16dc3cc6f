#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/\bAcct\b/Account/g' bank.py transfer.py main.py
