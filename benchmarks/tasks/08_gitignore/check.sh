#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace.
set -u
grep -q "__pycache__" .gitignore && grep -q "\*\.log" .gitignore
