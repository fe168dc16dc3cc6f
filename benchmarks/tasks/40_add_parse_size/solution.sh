#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
cat >> units.py <<'PY'


def parse_size(text):
    """The reverse of format_size: "10K" -> 10240."""
    text = text.strip().upper()
    if text and text[-1] in SUFFIXES[1:]:
        return int(text[:-1]) * 1024 ** SUFFIXES.index(text[-1])
    return int(text)
PY
