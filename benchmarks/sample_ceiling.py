"""How far choosing among drafts can take the small-model strategy on the task suite (issue 33):
pass@1 and pass@N of its first step, every task, samples drawn whether or not the greedy draft
passes the workspace's checks.

In a run, the strategy draws samples only when the greedy draft fails a check it found, so the
drafts of a run (``drafts_oracle.py``) say little about what sampling could give on tasks whose
greedy draft passed every check and still did not solve the task. Here each task gets the
strategy's own first request (its system prompt, the context ``gather_plain_context`` gathers,
the reply grammar, its ``max_tokens``) once at temperature 0 and ``--samples`` times at the
strategy's sampling temperature with seeds 1..N, on the same llama.cpp server. Each draft is
applied alone to a fresh copy of the task's ``setup/`` (a RUN line is run in ``bwrap``) and the
task's hidden ``check.sh`` decides. No draft ever reaches the workspace of a run.

It measures; it tunes nothing. The held-out split may be measured here because nothing is chosen
from it: the figure bounds what any choice among first-step drafts could reach.

Example::

    # the held-out split, greedy + 8 samples per task, local 1.5B server started on demand
    .venv/bin/python benchmarks/sample_ceiling.py --split heldout --samples 8 --model 1.5b \\
        --out benchmarks/results/issue33-ceiling-heldout-1.5b.jsonl

Resumes by task (tasks already in ``--out`` for the same model and commit are not run again).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from codeloop.agent.small_model.reply_format import GRAMMAR
from codeloop.agent.small_model.strategy import SYSTEM_PROMPT, StrategyConfig, _prompt, draft_tokens
from codeloop.agent.task_context import gather_plain_context
from codeloop.environments.local import LocalExecutionEnvironment

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import run_tasks  # noqa: E402  (benchmarks/ is not a package)
from drafts_oracle import apply_draft, solved  # noqa: E402

MAX_OUTPUT_TOKENS = 2048
"""The text profile's output limit on the local server (a quarter of its 8,192-token window):
the strategy asks ``min(draft_tokens(files), this)``."""


def first_request(task_dir: Path, instruction: str, workdir: Path) -> tuple[list[dict[str, str]], int]:
    """The messages and ``max_tokens`` of the strategy's first draft for this task."""
    config = StrategyConfig()
    env = LocalExecutionEnvironment(workdir)
    context = asyncio.run(gather_plain_context(env, instruction, config.context_chars))
    messages = [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": _prompt(instruction, context.files, context.map)}]
    return messages, min(draft_tokens(context.files), MAX_OUTPUT_TOKENS)


def draft(client: httpx.Client, base_url: str, model: str, messages: list[dict[str, str]], max_tokens: int,
          temperature: float, seed: int | None) -> str:
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature,
                            "max_tokens": max_tokens, "grammar": GRAMMAR, "cache_prompt": True}
    if seed is not None:
        body["seed"] = seed
    response = client.post(f"{base_url.rstrip('/')}/chat/completions", json=body, timeout=600)
    response.raise_for_status()
    return str(response.json()["choices"][0]["message"].get("content") or "")


def measure(task_dir: Path, instruction: str, client: httpx.Client, base_url: str, model: str,
            samples: int) -> dict[str, Any]:
    """Greedy + ``samples`` first-step drafts of one task, each checked alone."""
    workdir = run_tasks.WORK_ROOT / task_dir.name  # the path a run uses: it is part of the prompt
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(task_dir / "setup", workdir)
    start = time.monotonic()
    messages, max_tokens = first_request(task_dir, instruction, workdir)
    temperature = StrategyConfig().temperature
    passed = []
    for seed in [None, *range(1, samples + 1)]:
        text = draft(client, base_url, model, messages, max_tokens, 0.0 if seed is None else temperature, seed)
        with tempfile.TemporaryDirectory(prefix="codeloop-ceiling-", dir="/var/tmp") as scratch:
            trial = Path(scratch) / "w"
            shutil.copytree(task_dir / "setup", trial)
            passed.append(apply_draft(text, trial) and solved(task_dir, trial))
    shutil.rmtree(workdir, ignore_errors=True)
    return {"task": task_dir.name, "greedy_passed": passed[0], "samples": samples,
            "samples_passing": sum(passed[1:]), "any_passing": any(passed), "seconds": round(time.monotonic() - start, 1)}


def summary(rows: Sequence[dict[str, Any]]) -> list[str]:
    n = len(rows)
    return [f"tasks {n}: greedy first step solves {sum(r['greedy_passed'] for r in rows)}/{n}; "
            f"some of greedy + samples solves {sum(r['any_passing'] for r in rows)}/{n} (pass@N ceiling of choosing); "
            f"samples passing {sum(r['samples_passing'] for r in rows)}/{sum(r['samples'] for r in rows)}"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=run_tasks.SPLITS, default="heldout")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--model", default="1.5b", help="local model to serve (scripts/local-llm), unless --base-url")
    parser.add_argument("--base-url", help="an OpenAI-compatible llama.cpp server instead of the local one")
    parser.add_argument("--model-name", default="", help="the model name sent to --base-url")
    parser.add_argument("--out", type=Path, help="append one JSON row per task here (resumes by task)")
    args = parser.parse_args(argv)
    base_url = args.base_url or run_tasks.local_base_url(args.model)
    commit = run_tasks.current_commit()
    done: dict[str, dict[str, Any]] = {}
    if args.out and args.out.exists():
        for line in args.out.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if row.get("model") == args.model and row.get("commit") == commit and row.get("split") == args.split:
                done[row["task"]] = row
    rows = list(done.values())
    with httpx.Client() as client:
        for task_dir in run_tasks.select_tasks(args.split):
            if task_dir.name in done:
                continue
            instruction = run_tasks.instruction_file(task_dir, args.split).read_text().strip()
            row = {**measure(task_dir, instruction, client, base_url, args.model_name or args.model, args.samples),
                   "model": args.model, "split": args.split, "commit": commit,
                   "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            rows.append(row)
            print(f"{row['task']:36} greedy {'✔' if row['greedy_passed'] else '✘'}  samples passing "
                  f"{row['samples_passing']}/{row['samples']}  {row['seconds']:.0f} s", flush=True)
            if args.out:
                with args.out.open("a") as out:
                    out.write(json.dumps(row) + "\n")
    for line in summary(rows):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
