#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
rm plugins/rot13.py
sed -i 's/^from plugins import reverse, rot13, shout$/from plugins import reverse, shout/; s/(reverse, rot13, shout)/(reverse, shout)/' plugins/__init__.py
