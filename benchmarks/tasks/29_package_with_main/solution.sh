#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
mkdir mdstats
sed '/^if __name__ == "__main__":$/,$d' mdstats.py > mdstats/__init__.py
printf 'import sys\n\nfrom mdstats import main\n\nsys.exit(main(sys.argv[1:]))\n' > mdstats/__main__.py
rm mdstats.py
