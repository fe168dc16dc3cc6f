#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
printf 'REDIS_URL=redis://localhost:6379/0\nSECRET_KEY=\nAPP_WORKERS=2\n' >> .env.example
