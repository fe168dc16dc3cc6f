#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace.
set -u
grep -qx "requests==2.31.0" requirements.txt && grep -qx "flask==3.0.0" requirements.txt && grep -qx "click==8.1.7" requirements.txt
