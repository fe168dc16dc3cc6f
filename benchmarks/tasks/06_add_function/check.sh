#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace.
set -u
python3 -c "
from mathutils import is_even, square
assert is_even(4) and not is_even(7) and is_even(0) and square(3)==9"
