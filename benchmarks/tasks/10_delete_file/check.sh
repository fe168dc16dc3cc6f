#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace.
set -u
[ ! -e obsolete.txt ] && [ "$(cat keep.txt)" = "keep me" ]
