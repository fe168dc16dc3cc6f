#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/    return sorted(versions)$/    return sorted(versions, key=lambda v: [int(part) for part in v.split(".")])/' versions.py
