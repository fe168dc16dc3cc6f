#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/^def join_fields(fields):$/def join_fields(fields, sep=","):/; s/return ",".join(/return sep.join(/' textutils.py
sed -i 's/print(join_fields(row))/print(join_fields(row, sep=";"))/' export.py
