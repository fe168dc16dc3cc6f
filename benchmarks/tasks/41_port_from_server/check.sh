#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace: server.py unchanged (sha256) and
# config.json holds its port, every other key as it was.
set -u
echo "8d410d220f93696971549ed8e8b7d6e820c539925e7e78efa1e931863f0c45af  server.py" | sha256sum -c --quiet - >/dev/null 2>&1 &&
python3 "$(dirname "$0")/hidden/check.py"
