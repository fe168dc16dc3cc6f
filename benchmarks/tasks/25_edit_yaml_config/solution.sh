#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/^  port: 5432 /  port: 6432 /; s/^  level: info$/  level: debug/' config.yaml
