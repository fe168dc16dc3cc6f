#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace: the test file is unchanged (sha256),
# it passes, and so do the cases in hidden/ (never in setup/).
set -u
export PYTHONDONTWRITEBYTECODE=1
echo "7b80b83a8c3f1db106ca3c6a289d916490a813843358f8c682e00419e9c06ea7  test_durations.py" | sha256sum -c --quiet - >/dev/null 2>&1 &&
python3 -m unittest -q test_durations >/dev/null 2>&1 &&
python3 "$(dirname "$0")/hidden/check.py"
