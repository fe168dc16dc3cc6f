#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace.
set -u
python3 test_stats.py >/dev/null 2>&1 && cmp -s test_stats.py "$(dirname "$0")/setup/test_stats.py"
