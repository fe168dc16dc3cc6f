#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
printf 'print("Hello, world!")\n' > hello.py
