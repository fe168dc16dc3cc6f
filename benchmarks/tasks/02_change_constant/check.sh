#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace.
set -u
grep -qx "MAX_RETRIES = 5" config.py && grep -qx "TIMEOUT_SECONDS = 30" config.py && [ "$(grep -c MAX_RETRIES config.py)" = 1 ]
