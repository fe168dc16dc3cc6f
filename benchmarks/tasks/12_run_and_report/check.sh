#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace.
set -u
[ "$(tr -d "[:space:]" < result.txt)" = "42" ]
