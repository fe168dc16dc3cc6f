#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace: the test file is unchanged (sha256),
# it passes, and so do the cases in hidden/ (never in setup/).
set -u
export PYTHONDONTWRITEBYTECODE=1
echo "8af8455a26b0d076c212bd57d5cb4419744e5af6c0c46e06542408a09eff3d2a  test_cart.py" | sha256sum -c --quiet - >/dev/null 2>&1 &&
python3 -m unittest -q test_cart >/dev/null 2>&1 &&
python3 "$(dirname "$0")/hidden/check.py"
