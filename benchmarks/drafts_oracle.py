"""The ceiling of the small-model strategy on a task run (issue 33): would any of its drafts
have solved the task, and did the choice pick one that does?

``run_tasks.py`` records only whether the task ended solved. The strategy's session logs
(``~/.local/state/codeloop/sessions/*.jsonl``) hold every draft it made (``assistant_text_end``),
which one it chose (``chose draft K of N``) and the tool calls that wrote the chosen change or
ran a command. This script replays each session of a run in a fresh copy of the task's
``setup/``, step by step: before each step's own tool calls are replayed, *every* draft of that
step is applied alone to a copy of the workspace as it stood (FILE/DELETE blocks written, a RUN
line run, DONE left as is) and the task's hidden ``check.sh`` is run there. So for each task:

- ``drafts``: how many drafts the session made; ``passing``: how many solve the task when applied
  at their own step (pass@N's numerator, per draft);
- ``any_passing``: some draft solved it, so a perfect choice would have (the method's ceiling);
- ``greedy_passing``: some step's greedy draft (the first of the step) solved it;
- ``chosen_steps_with_passing`` / ``chosen_passing``: among the steps that had a passing draft, how
  many times the strategy chose a passing one (choice accuracy).

Runs after the benchmark, never during it: the check never reaches the agent. Commands a draft's
RUN line holds run inside ``bwrap`` (network off, only the copy writable), each with a timeout.

Example::

    # the held-out split's strategy sessions between two times (UTC), beside run_tasks' results
    .venv/bin/python benchmarks/drafts_oracle.py --split heldout \\
        --since 2026-11-29T05:27:00Z --until 2026-11-29T06:55:00Z --out oracle-heldout.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from codeloop.agent.small_model.hunks import HunkError, apply_reply
from codeloop.agent.small_model.reply_format import (
    DoneReply,
    FilesReply,
    ReplyFormatError,
    RunReply,
    complete_blocks,
    parse_reply,
    without_examples,
)

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import run_tasks  # noqa: E402  (benchmarks/ is not a package)

SESSIONS = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local/state")) / "codeloop/sessions"
RUN_TIMEOUT = 30
"""Seconds a draft's RUN line (or a replayed shell call) may take."""


@dataclass
class Step:
    """One step of the strategy: its drafts in order, the index of the chosen one among the
    step's candidates (None: none chosen, e.g. a RUN or DONE step), and the tool calls that
    followed (name, arguments, failed)."""

    drafts: list[str] = field(default_factory=list)
    chosen: int | None = None
    candidates: int = 0
    calls: list[tuple[str, dict[str, Any], bool]] = field(default_factory=list)


@dataclass
class Session:
    task: str
    path: Path
    steps: list[Step]


def read_session(path: Path) -> Session | None:
    """The strategy's steps in one session log, or None when the log is not a strategy session
    (no "drafting" note: another agent, or another codeloop)."""
    steps: list[Step] = []
    task = ""
    open_calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for line in path.read_text("utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind, data = event.get("kind"), event.get("data") or {}
        if kind == "session_start":
            task = Path(str(data.get("working_directory", ""))).name
        elif kind == "warning" and data.get("code") == "small_model":
            message = str(data.get("message", ""))
            if message in ("drafting", "drafting the next step"):
                steps.append(Step())
            elif message.startswith("chose draft ") and steps:
                numbers = message.removeprefix("chose draft ").split(" of ")
                steps[-1].chosen, steps[-1].candidates = int(numbers[0]) - 1, int(numbers[1])
        elif kind == "assistant_text_end" and steps:
            steps[-1].drafts.append(str(data.get("text", "")))
        elif kind == "tool_call_start" and steps:
            open_calls[str(data.get("call_id"))] = (str(data.get("tool_name")), dict(data.get("arguments") or {}))
        elif kind == "tool_call_end" and steps:
            started = open_calls.pop(str(data.get("call_id")), None)
            if started is not None:
                steps[-1].calls.append((started[0], started[1], data.get("error") is not None))
    for step in steps:
        if step.chosen is None and any(name != "shell" for name, _, _ in step.calls):
            step.chosen, step.candidates = 0, 1  # the greedy draft alone was judged and written: no "chose" note
    return Session(task, path, steps) if steps else None


def run_sandboxed(command: str, workdir: Path) -> None:
    """Run a model's command line in ``workdir`` with only that directory writable and no network."""
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--bind", str(workdir), str(workdir), "--unshare-net", "--die-with-parent", "--chdir", str(workdir),
            "bash", "-c", command]
    try:
        subprocess.run(argv, capture_output=True, timeout=RUN_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        pass


def read_draft(text: str) -> object:
    """A draft as the strategy reads it: the reply, or the blocks complete before a fault."""
    try:
        return parse_reply(text)
    except ReplyFormatError:
        return complete_blocks(text)


def apply_draft(text: str, workdir: Path) -> bool:
    """Apply one draft to ``workdir`` as the strategy reads it; False when it cannot be applied."""
    parsed = read_draft(text)
    if isinstance(parsed, RunReply):
        run_sandboxed(parsed.command, workdir)
        return True
    if isinstance(parsed, DoneReply):
        return True
    reply = without_examples(parsed) if isinstance(parsed, FilesReply) else None
    if reply is None:
        return False

    def read(path: str) -> str | None:
        target = workdir / path
        return target.read_text("utf-8", errors="replace") if target.is_file() else None

    try:
        changed = apply_reply(reply, read)
    except HunkError:
        return False
    for path, content in changed.items():
        if (target := inside(workdir, path)) is None:
            return False
        if content is None:
            target.unlink(missing_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, "utf-8")
    return True


def inside(workdir: Path, path: str) -> Path | None:
    """``path`` resolved under ``workdir``, or None when it would leave it (a draft or a logged call
    is the model's text: it never writes outside the copy)."""
    target = (workdir / path).resolve()
    return target if target.is_relative_to(workdir.resolve()) else None


def replay_call(name: str, arguments: dict[str, Any], workdir: Path) -> None:
    """Replay one tool call the strategy made (its writes, deletes and commands); a path leaving
    the copy is not replayed (the pipeline refused it in the run)."""
    if name == "write_file":
        if (target := inside(workdir, str(arguments["file_path"]))) is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(str(arguments["content"]), "utf-8")
    elif name == "apply_patch":
        for line in str(arguments.get("patch", "")).splitlines():
            if line.startswith("*** Delete File: ") and (
                    target := inside(workdir, line.removeprefix("*** Delete File: ").strip())) is not None:
                target.unlink(missing_ok=True)
    elif name == "shell":
        run_sandboxed(str(arguments.get("command", "")), workdir)


def solved(task_dir: Path, workdir: Path) -> bool:
    check = subprocess.run(["bash", str(task_dir / "check.sh")], cwd=workdir, capture_output=True, timeout=60,
                           check=False)
    return check.returncode == 0


def oracle(session: Session, task_dir: Path, scratch: Path) -> dict[str, Any]:
    """Replay ``session`` in a copy of ``task_dir``'s setup; the row described in the module's docstring."""
    state = scratch / "state"
    shutil.copytree(task_dir / "setup", state)
    passing = greedy_passing = with_passing = chosen_passing = 0
    drafts = 0
    for number, step in enumerate(session.steps):
        outcomes = []
        for text in step.drafts:
            if isinstance(read_draft(text), DoneReply):
                continue  # DONE changes nothing: it solves only what an earlier step solved
            trial = scratch / f"trial-{number}-{len(outcomes)}"
            shutil.copytree(state, trial, symlinks=True)
            outcomes.append(apply_draft(text, trial) and solved(task_dir, trial))
            shutil.rmtree(trial, ignore_errors=True)
        drafts += len(outcomes)
        passing += sum(outcomes)
        greedy_passing += bool(outcomes) and outcomes[max(0, len(outcomes) - max(step.candidates, 1))]
        if step.chosen is not None and any(outcomes):
            with_passing += 1
            chosen_passing += outcomes[len(outcomes) - step.candidates + step.chosen]
        for name, arguments, failed in step.calls:
            if not failed:
                replay_call(name, arguments, state)
    return {"task": session.task, "session": session.path.name, "steps": len(session.steps), "drafts": drafts,
            "passing": passing, "any_passing": passing > 0, "greedy_passing": greedy_passing > 0,
            "chosen_steps_with_passing": with_passing, "chosen_passing": chosen_passing,
            "replayed_solved": solved(task_dir, state)}


def sessions_between(since: float, until: float, tasks: set[str], directory: Path = SESSIONS) -> Iterator[Session]:
    for path in sorted(directory.glob("*.jsonl"), key=lambda p: p.stat().st_mtime):
        if since <= path.stat().st_mtime <= until:
            session = read_session(path)
            if session is not None and session.task in tasks:
                yield session


def summary(rows: Sequence[dict[str, Any]]) -> list[str]:
    n = len(rows)
    drafts = sum(r["drafts"] for r in rows)
    steps = sum(r["chosen_steps_with_passing"] for r in rows)
    return [
        f"tasks {n}; drafts {drafts}, of which solve the task at their step: {sum(r['passing'] for r in rows)}",
        f"some draft solves it (ceiling of choosing): {sum(r['any_passing'] for r in rows)}/{n}",
        f"a greedy draft solves it: {sum(r['greedy_passing'] for r in rows)}/{n}",
        f"the replayed session ends solved: {sum(r['replayed_solved'] for r in rows)}/{n}",
        f"choice accuracy: {sum(r['chosen_passing'] for r in rows)}/{steps} steps with a passing draft chose one",
    ]


def timestamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=run_tasks.SPLITS, default="heldout")
    parser.add_argument("--since", required=True, help="UTC time the run started, e.g. 2026-11-29T05:27:00Z")
    parser.add_argument("--until", required=True, help="UTC time the run ended")
    parser.add_argument("--sessions", type=Path, default=SESSIONS, help=f"session logs (default {SESSIONS})")
    parser.add_argument("--out", type=Path, help="append one JSON row per session here")
    args = parser.parse_args(argv)
    task_dirs = {d.name: d for d in run_tasks.select_tasks(args.split)}
    rows = []
    for session in sessions_between(timestamp(args.since), timestamp(args.until), set(task_dirs), args.sessions):
        with tempfile.TemporaryDirectory(prefix="codeloop-oracle-", dir="/var/tmp") as scratch:
            row = oracle(session, task_dirs[session.task], Path(scratch))
        rows.append(row)
        print(f"{row['task']:36} drafts {row['drafts']:2}  passing {row['passing']:2}  "
              f"chosen {row['chosen_passing']}/{row['chosen_steps_with_passing']}  "
              f"replayed {'solved' if row['replayed_solved'] else 'not solved'}", flush=True)
        if args.out:
            with args.out.open("a") as out:
                out.write(json.dumps(row) + "\n")
    for line in summary(rows):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
