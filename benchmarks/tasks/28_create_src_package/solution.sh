#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
mkdir -p src/inventory
printf '"""Track what is on the shelves."""\n\n__version__ = "0.1.0"\n' > src/inventory/__init__.py
printf 'from inventory import __version__\n\nprint(f"inventory {__version__}")\n' > src/inventory/__main__.py
