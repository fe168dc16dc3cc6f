"""N tool rounds through pydantic-ai (FunctionModel answers instantly), each running
``cat small.txt`` through bash; prints JSON {per_round_s, peak_bytes}. Runs in .bench/pydantic-ai."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
import tracemalloc

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits


def main(rounds: int, workdir: str, trace: bool) -> None:
    stamps: list[float] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        stamps.append(time.perf_counter())
        if len(stamps) > rounds:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("shell", {"command": "cat small.txt"})])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def shell(command: str) -> str:
        """Run a shell command."""
        done = subprocess.run(["bash", "-c", command], cwd=workdir, capture_output=True, text=True, timeout=10)
        return done.stdout + done.stderr

    if trace:
        tracemalloc.start()
    agent.run_sync("go", usage_limits=UsageLimits(request_limit=None, tool_calls_limit=None))
    peak = tracemalloc.get_traced_memory()[1] if trace else 0
    print(json.dumps({"per_round_s": [b - a for a, b in itertools.pairwise(stamps)], "peak_bytes": peak}))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3] == "trace")
