#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace: the test file is unchanged (sha256),
# it passes, and so do the cases in hidden/ (never in setup/).
set -u
export PYTHONDONTWRITEBYTECODE=1
echo "f8c63192f8518af55073d56ea403899c88275583660c7a7391dc88bde99911ce  test_dates.py" | sha256sum -c --quiet - >/dev/null 2>&1 &&
python3 test_dates.py >/dev/null 2>&1 &&
python3 "$(dirname "$0")/hidden/check.py"
