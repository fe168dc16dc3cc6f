#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace: the test file is unchanged (sha256),
# it passes, and so do the cases in hidden/ (never in setup/).
set -u
export PYTHONDONTWRITEBYTECODE=1
echo "56d56395187d22c9e69d760296d003bf30fa24d42a96a9cd9bd9fbe9fd482fc6  tests/test_versions.py" | sha256sum -c --quiet - >/dev/null 2>&1 &&
python3 -m unittest discover tests >/dev/null 2>&1 &&
python3 "$(dirname "$0")/hidden/check.py"
