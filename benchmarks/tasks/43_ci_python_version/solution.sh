#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/python-version: "3.8"/python-version: "3.11"/' .github/workflows/ci.yml
