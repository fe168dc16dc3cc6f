#!/usr/bin/env bash
# Exit 0 when the task is solved; runs in the task workspace.
set -u
python3 -c "
import json,sys
d=json.load(open(\"settings.json\"))
sys.exit(0 if d=={\"name\":\"api\",\"port\":8080,\"debug\":False,\"hosts\":[\"a.example\",\"b.example\"],\"limits\":{\"rps\":50}} else 1)"
