#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
mv db.py database.py
sed -i 's/^from db import /from database import /' models.py
sed -i 's/^import db$/import database as db/' cli.py
