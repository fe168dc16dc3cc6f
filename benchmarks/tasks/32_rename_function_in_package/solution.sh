#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
sed -i 's/\bget_usr\b/get_user/g' api/__init__.py api/users.py api/routes.py app.py tests/test_users.py
