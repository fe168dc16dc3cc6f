#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/^version = "1.3.2"$/version = "1.4.0"/' pyproject.toml
