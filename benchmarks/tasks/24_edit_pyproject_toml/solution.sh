#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/^requires-python = ">=3.8"$/requires-python = ">=3.10"/; s/^    "platformdirs>=3",$/    "platformdirs>=3",\n    "rich>=13",/' pyproject.toml
