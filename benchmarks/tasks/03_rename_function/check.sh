#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace.
set -u
python3 main.py >/dev/null 2>&1 && ! grep -rq calc_total --include=*.py . && grep -q "def compute_total" shop.py
