#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace. What the check needs beyond the
# workspace lives beside this file (hidden/), never in setup/.
set -u
export PYTHONDONTWRITEBYTECODE=1
python3 "$(dirname "$0")/hidden/check.py"
