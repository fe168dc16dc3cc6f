#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/^def rectangle_perimeter(width, height):$/&\n    """Perimeter of a width x height rectangle."""/' shapes.py
