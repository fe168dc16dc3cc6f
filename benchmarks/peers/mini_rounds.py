"""N rounds through mini-swe-agent's DefaultAgent with its DeterministicModel (instant),
each running ``cat small.txt`` in LocalEnvironment; prints JSON {per_round_s, peak_bytes}.
Runs in .bench/mini."""

from __future__ import annotations

import itertools
import json
import sys
import time
import tracemalloc
from typing import Any

from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.test_models import DeterministicModel, make_output


class StampedModel(DeterministicModel):
    """DeterministicModel that records when each query arrives."""

    def __init__(self, stamps: list[float], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stamps = stamps

    def query(self, messages: list[dict[str, str]], **kwargs: Any) -> dict:
        self.stamps.append(time.perf_counter())
        return super().query(messages, **kwargs)


def main(rounds: int, workdir: str, trace: bool) -> None:
    stamps: list[float] = []
    outputs = [make_output("```bash\ncat small.txt\n```", [{"command": "cat small.txt"}], cost=0.0)
               for _ in range(rounds)]
    outputs.append(make_output("done", [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}], cost=0.0))
    agent = DefaultAgent(StampedModel(stamps, outputs=outputs), LocalEnvironment(cwd=workdir),
                         system_template="You are a test.", instance_template="{{task}}", cost_limit=0.0)
    if trace:
        tracemalloc.start()
    agent.run("go")
    peak = tracemalloc.get_traced_memory()[1] if trace else 0
    print(json.dumps({"per_round_s": [b - a for a, b in itertools.pairwise(stamps)], "peak_bytes": peak}))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3] == "trace")
