"""The SIGKILL campaign of issue 23 for ``codeloop run`` + ``--resume``.

One *trial*: a fresh workspace and a loopback Chat Completions model (:class:`StepServer`)
that asks for ``steps`` tool calls, one per reply, each leaving a unique mark: odd steps run
``shell`` ``sleep 0.03; echo step-K >> log.txt`` (a window in which a kill cuts a running
command), even steps ``write_file`` ``files/step-K.txt`` (a checkpointed write). The real
``codeloop run`` is started as a subprocess and SIGKILLed (the process alone, as ``kill -9``
does) at a random point: once its session log holds a random number of lines, plus a random
0-50 ms. Then ``codeloop run --resume ID "continue"`` runs to completion and the trial checks:

- the log parses, with no unreadable line (a torn last line is cut by the resumed writer);
- *lost*: a step whose ``tool_call_end`` is in the log (it completed) but whose mark is absent;
- *duplicated*: a mark present twice, or a step started again after it had completed;
- *rerun*: an interrupted step started again after the resume;
- *interrupted*: a step with ``tool_call_start`` but no ``tool_call_end`` (cut by the kill).
  Counted apart, with whether its mark is present: exactly-once is impossible for a command
  killed mid-run (it may have written before it died), so the promise is "reported
  interrupted, not re-run", and the model is not asked to run it again;
- *inconsistent*: a checkpointed file whose recorded ``after`` hash differs from the file
  (interrupted writes excepted), an unexpected line in ``log.txt``, or a step never done.

The model is deterministic from the conversation it is sent, as a real one would be: it asks
for the step after the highest one already called, so a resumed session that forgot a
completed call would ask for it again (a duplicate), and one that forgot an interrupted call
would re-run it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chat_server import ChatServer, text_reply, tool_reply
from test_run_cli import CODELOOP, isolated_env

from codeloop.sessions.log import SessionLogWarning, parse_log

STEP = re.compile(r"step-(\d+)")
ARGS = ["--provider", "openai_compatible", "--profile", "anthropic", "--approval", "never-ask",
        "--sandbox", "off"]


def step_call(k: int) -> dict[str, Any]:
    """The model's reply asking for step ``k``."""
    if k % 2:
        return tool_reply("shell", {"command": f"sleep 0.03; echo step-{k} >> log.txt"}, call_id=f"call_{k}")
    return tool_reply("write_file", {"file_path": f"files/step-{k}.txt", "content": f"step-{k}\n"},
                      call_id=f"call_{k}")


class StepServer(ChatServer):
    """A Chat Completions server whose reply depends only on the request: the next step after
    the highest one the conversation's assistant messages already called, then "done"."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.replies = _NextStep(self, steps)  # type: ignore[assignment]


class _NextStep:
    """ChatServer's reply queue, computed from the request it has just recorded (``codeloop
    run`` makes one model call at a time)."""

    def __init__(self, server: ChatServer, steps: int) -> None:
        self.server, self.steps = server, steps

    def __bool__(self) -> bool:
        return True

    def popleft(self) -> dict[str, Any]:
        messages = self.server.requests[-1].get("messages", [])
        called = [int(m) for msg in messages if msg.get("role") == "assistant"
                  for m in STEP.findall(json.dumps(msg.get("tool_calls") or []))]
        k = max(called, default=0) + 1
        return step_call(k) if k <= self.steps else text_reply(f"All {self.steps} steps done.")


@dataclass
class Trial:
    """What one trial found."""

    killed: bool = False
    """The SIGKILL landed before the first run ended (else the run finished first)."""
    kill_after_lines: int = 0
    log_lines_at_kill: int = 0
    completed: list[int] = field(default_factory=list)
    interrupted: list[int] = field(default_factory=list)
    interrupted_mark_present: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    duplicated: list[int] = field(default_factory=list)
    rerun: list[int] = field(default_factory=list)
    """Interrupted calls started again by the resumed session (the promise is: not re-run)."""
    unreadable_lines: int = 0
    problems: list[str] = field(default_factory=list)
    """Inconsistencies (checkpoint mismatch, unexpected text, a step never done, a failed resume)."""

    def summary(self) -> str:
        return (f"killed={self.killed} at {self.log_lines_at_kill} log lines; completed={len(self.completed)} "
                f"interrupted={self.interrupted} (mark present: {self.interrupted_mark_present}) "
                f"lost={self.lost} duplicated={self.duplicated} rerun={self.rerun} unreadable={self.unreadable_lines} "
                f"problems={self.problems}")


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _codeloop(server: StepServer, ws: Path, *args: str) -> list[str]:
    return [CODELOOP, "run", *args, "--cwd", str(ws), "--base-url", server.base_url, *ARGS]


def run_trial(root: Path, rng: random.Random, *, steps: int, max_kill_line: int) -> Trial:
    """One trial in the empty directory ``root`` (workspace ``root/ws``, state ``root/state``).
    ``max_kill_line``: the kill waits for between 1 and this many log lines."""
    ws = root / "ws"
    ws.mkdir(parents=True)
    env = isolated_env(ws, OPENAI_API_KEY="test-key")
    sessions = root / "state" / "sessions"
    trial = Trial(kill_after_lines=rng.randint(1, max_kill_line))
    jitter = rng.uniform(0, 0.05)
    with StepServer(steps) as server:
        with open(root / "first.err", "wb") as err:
            proc = subprocess.Popen(_codeloop(server, ws, f"do the {steps} steps"), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err, env=env)
        try:
            while proc.poll() is None:
                logs = list(sessions.glob("*.jsonl")) if sessions.is_dir() else []
                if logs and _lines(logs[0]) >= trial.kill_after_lines:
                    time.sleep(jitter)
                    os.kill(proc.pid, signal.SIGKILL)
                    break
                time.sleep(0.002)
        finally:
            trial.killed = proc.wait(timeout=60) == -signal.SIGKILL
        logs = sorted(sessions.glob("*.jsonl")) if sessions.is_dir() else []
        if len(logs) != 1:
            trial.problems.append(f"{len(logs)} session logs after the first run")
            return trial
        log = logs[0]
        trial.log_lines_at_kill = _lines(log)
        if trial.killed:
            resumed = subprocess.run(_codeloop(server, ws, "continue", "--resume", log.stem), stdin=subprocess.DEVNULL,
                                     capture_output=True, text=True, env=env, timeout=120)
            if resumed.returncode != 0:
                trial.problems.append(f"resume exited {resumed.returncode}: {resumed.stderr[-500:]}")
    check(trial, ws, log, steps)
    return trial


def check(trial: Trial, ws: Path, log: Path, steps: int) -> None:
    """Compare the log with the workspace and the checkpoints (see the module docstring)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SessionLogWarning)
        events = parse_log(log.read_bytes(), str(log))
    trial.unreadable_lines = sum(1 for w in caught if issubclass(w.category, SessionLogWarning))
    started: dict[str, int] = {}
    starts: Counter[int] = Counter()
    ended: dict[int, list[bool]] = {}
    order: list[tuple[str, int]] = []
    for e in events:
        if e.kind == "tool_call_start":
            found = STEP.search(json.dumps(e.data.get("arguments")))
            if found is None:
                trial.problems.append(f"a call without a step: {e.data}")
                continue
            k = int(found.group(1))
            started[str(e.data.get("call_id"))] = k
            starts[k] += 1
            order.append(("start", k))
        elif e.kind == "tool_call_end":
            k = started.get(str(e.data.get("call_id")), 0)
            ended.setdefault(k, []).append(not isinstance(e.data.get("error"), str))
            order.append(("end", k))
    marks = Counter(STEP.findall(_read(ws / "log.txt")))
    text = _read(ws / "log.txt")
    if any(not STEP.fullmatch(line) for line in text.splitlines()):
        trial.problems.append(f"unexpected text in log.txt: {text!r}")
    for k in range(2, steps + 1, 2):
        content = _read(ws / "files" / f"step-{k}.txt")
        if content:
            marks[str(k)] += 1 if content == f"step-{k}\n" else 0
            if content != f"step-{k}\n":
                trial.problems.append(f"files/step-{k}.txt holds {content!r}")
    for k in range(1, steps + 1):
        present = marks[str(k)]
        ok_ends = ended.get(k, [])
        if present > 1 or (starts[k] > 1 and _started_after_end(order, k)):
            trial.duplicated.append(k)
        elif starts[k] > 1:
            trial.rerun.append(k)
        if ok_ends and any(ok_ends):
            trial.completed.append(k)
            if present == 0:
                trial.lost.append(k)
        elif starts[k] and not ok_ends:
            trial.interrupted.append(k)
            if present:
                trial.interrupted_mark_present.append(k)
        elif ok_ends:
            trial.problems.append(f"step {k} ended with an error: {ended[k]}")
        else:
            trial.problems.append(f"step {k} never started")
    _check_checkpoints(trial, ws, log)


def _started_after_end(order: list[tuple[str, int]], k: int) -> bool:
    seen_end = False
    for what, step in order:
        if step == k and what == "end":
            seen_end = True
        elif step == k and what == "start" and seen_end:
            return True
    return False


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def _check_checkpoints(trial: Trial, ws: Path, log: Path) -> None:
    """Each file a turn wrote holds what that turn's checkpoint says it left (the files are
    written once each, so the last turn's ``after`` is the current content)."""
    interrupted = {f"files/step-{k}.txt" for k in trial.interrupted}
    for manifest in sorted((log.parent / f"{log.stem}.checkpoints" / "turns").glob("*.json")):
        try:
            files = json.loads(manifest.read_text())["files"]
        except (ValueError, KeyError) as exc:
            trial.problems.append(f"unreadable checkpoint {manifest.name}: {exc}")
            continue
        for path, change in files.items():
            if path in interrupted:
                continue
            try:
                now: str | None = hashlib.sha256((ws / path).read_bytes()).hexdigest()
            except FileNotFoundError:
                now = None
            if change.get("after") != now:
                trial.problems.append(f"checkpoint {manifest.name}: {path} after={change.get('after')} now={now}")


@dataclass
class Campaign:
    """Totals over trials."""

    trials: list[Trial] = field(default_factory=list)

    def totals(self) -> dict[str, int]:
        t = self.trials
        return {
            "trials": len(t),
            "killed": sum(x.killed for x in t),
            "completed_calls": sum(len(x.completed) for x in t),
            "lost": sum(len(x.lost) for x in t),
            "duplicated": sum(len(x.duplicated) for x in t),
            "rerun": sum(len(x.rerun) for x in t),
            "interrupted": sum(len(x.interrupted) for x in t),
            "interrupted_mark_present": sum(len(x.interrupted_mark_present) for x in t),
            "unreadable_lines": sum(x.unreadable_lines for x in t),
            "problems": sum(len(x.problems) for x in t),
        }


def calibrate(root: Path, steps: int) -> int:
    """Log lines of an unkilled run of ``steps`` steps (the range the kill point is drawn from)."""
    trial = run_trial(root, random.Random(0), steps=steps, max_kill_line=10**9)
    if trial.killed or trial.problems or len(trial.completed) != steps:
        raise RuntimeError(f"the unkilled calibration run failed: {trial.summary()}")
    return _lines(next((root / "state" / "sessions").glob("*.jsonl")))


def run_campaign(root: Path, trials: int, *, steps: int, seed: int, progress: bool = False) -> Campaign:
    """``trials`` trials under ``root`` (one directory each), kill points drawn from ``seed``."""
    max_line = calibrate(root / "calibration", steps) - 1
    rng = random.Random(seed)
    campaign = Campaign()
    for n in range(trials):
        trial = run_trial(root / f"trial-{n}", rng, steps=steps, max_kill_line=max_line)
        campaign.trials.append(trial)
        if progress:
            print(f"trial {n}: {trial.summary()}", flush=True)
    return campaign
