#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/def __init__(self, items=\[\]):/def __init__(self, items=None):/; s/        self.items = items$/        self.items = list(items or [])/' cart.py
