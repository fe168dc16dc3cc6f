"""The SIGKILL campaign of issue 23 for ``codeloop relay step``.

One *trial*: a fresh relay root whose inbox holds a reply of ``commands`` x 3 commands, each
leaving a mark that can be counted: ``CREATE_FILE files/f<K>.txt``, an ``EDIT_FILE`` of line
K+1 of ``counter.txt`` (a non-idempotent chain: applied twice or skipped, the file comes out
wrong) and ``RUN_COMMAND`` ``sleep 0.01; echo <K> >> runlog.txt``. The real ``codeloop relay
step`` runs as a subprocess and is SIGKILLed (the process alone, as ``kill -9`` does) at a
random point: a random time after its start (start-up, claim, outbox, commit, archive), or
once its step journal holds a random number of lines plus 0-20 ms (while commands apply).
Then ``relay step`` runs again, as a new process, and the trial checks:

- the next outbox exists and holds one result per command, in order, each once (spec text
  ``[OK] CMD: ...`` / ``[FAILED] CMD: ...``), the reply is archived, the inbox is empty;
- *lost*: a command reported ``[OK]`` whose effect is missing (a file, its edit, its line);
- *duplicated*: a command's effect twice (a ``runlog.txt`` line twice; ``counter.txt`` not
  exactly the chain of edits, which an edit applied twice or skipped would break);
- *interrupted*: a ``RUN_COMMAND`` the kill cut, reported ``[FAILED]`` "interrupted because
  the relay stopped" and not run again (its line may be present: it may have written it
  before it died; exactly-once is impossible for a command killed mid-run);
- *inconsistent*: anything else (a failed command other than an interrupted one, an
  unexpected line, an unarchived reply, a second run that failed).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from relay_helpers import CODELOOP, clean_env

from codeloop.relay.config import load_config
from codeloop.relay.engine import start_session
from kill_campaign_common import Outcome, count_lines, read_text, sum_trials

RESULT = re.compile(r"^\[(OK|FAILED)\] (\w+): (.*)$", re.M)
INTERRUPTED = "interrupted because the relay stopped"


def reply(commands: int) -> str:
    """The pasted reply: for each K, a file write, an edit of line K+1, a shell append."""
    parts = []
    for k in range(commands):
        parts.append(f'[CREATE_FILE path="files/f{k}.txt"]\n{k}\n[/CREATE_FILE]\n')
        parts.append(f'[EDIT_FILE path="counter.txt" start_line="{k + 1}" end_line="{k + 1}"]\nx{k}\nend\n'
                     "[/EDIT_FILE]\n")
        parts.append(f"[RUN_COMMAND]\nsleep 0.01; echo {k} >> runlog.txt\n[/RUN_COMMAND]\n")
    return "".join(parts)


@dataclass
class Trial(Outcome):
    """What one trial found."""

    killed: bool = False
    """The SIGKILL landed before the first step ended (else the step finished first)."""
    mid_apply: bool = False
    """The kill came while the reply's commands were being applied (journal started, no outbox)."""
    journal_lines_at_kill: int = 0
    completed: int = 0
    """Commands reported ``[OK]``."""

    def summary(self) -> str:
        return (f"killed={self.killed} mid_apply={self.mid_apply} at {self.journal_lines_at_kill} journal lines; "
                f"completed={self.completed} interrupted={self.interrupted} (mark present: "
                f"{self.interrupted_mark_present}) lost={self.lost} duplicated={self.duplicated} "
                f"problems={self.problems}")




def run_trial(root: Path, rng: random.Random, *, commands: int) -> Trial:
    """One trial in the empty directory ``root``."""
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "counter.txt").write_text("end\n")
    config = load_config(str(root), environ={})
    state, _ = asyncio.run(start_session(config, "kill campaign"))
    sid = state.session_id
    (root / "inbox" / "reply.txt").write_text(reply(commands))
    journal = config.journal_dir / f"{sid}_seq0001.jsonl"
    outbox = root / "outbox" / f"{sid}_seq0002.txt"
    step = [*CODELOOP, "relay", "step", "--root", str(root), "--no-clipboard"]
    trial = Trial()
    at_time = rng.random() < 0.25
    delay = rng.uniform(0.0, 2.0) if at_time else rng.uniform(0.0, 0.02)
    after_lines = rng.randint(1, 2 * 3 * commands)
    proc = subprocess.Popen(step, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env())
    try:
        if at_time:
            time.sleep(delay)
        else:
            while proc.poll() is None and count_lines(journal) < after_lines:
                time.sleep(0.001)
            time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    finally:
        trial.killed = proc.wait(timeout=60) == -signal.SIGKILL
    trial.journal_lines_at_kill = count_lines(journal)
    trial.mid_apply = trial.killed and journal.exists() and not outbox.exists()
    again = subprocess.run(step, capture_output=True, text=True, env=clean_env(), timeout=120)
    if again.returncode != 0:
        trial.problems.append(f"second step exited {again.returncode}: {again.stderr[-500:]}")
    check(trial, root, sid, commands)
    return trial


def check(trial: Trial, root: Path, sid: str, commands: int) -> None:
    """Compare the outbox with the workspace (see the module docstring)."""
    ws = root / "workspace"
    outbox = read_text(root / "outbox" / f"{sid}_seq0002.txt")
    if not outbox:
        trial.problems.append("no next outbox")
        return
    results = RESULT.findall(outbox)
    kinds = [kind for _, kind, _ in results]
    if kinds != ["CREATE_FILE", "EDIT_FILE", "RUN_COMMAND"] * commands:
        trial.problems.append(f"the outbox's results are not one per command in order: {kinds}")
        return
    ran = Counter(line for line in read_text(ws / "runlog.txt").split("\n") if line)
    for line in ran:
        if not line.isdigit() or int(line) >= commands:
            trial.problems.append(f"unexpected line in runlog.txt: {line!r}")
    expected_counter = "".join(f"x{k}\n" for k in range(commands)) + "end\n"
    counter = read_text(ws / "counter.txt")
    if counter != expected_counter:
        trial.duplicated.append(f"counter.txt holds {counter!r}")  # an edit applied twice, or skipped
    for k in range(commands):
        create, edit, run = results[3 * k: 3 * k + 3]
        for name, (status, kind, summary), present in (
                (f"create {k}", create, int(read_text(ws / f"files/f{k}.txt") == f"{k}\n")),
                (f"edit {k}", edit, int(counter.splitlines()[k:k + 1] == [f"x{k}"])),
                (f"run {k}", run, ran[str(k)])):
            if present > 1:
                trial.duplicated.append(name)
            if status == "OK":
                trial.completed += 1
                if present == 0:
                    trial.lost.append(name)
            elif kind == "RUN_COMMAND" and INTERRUPTED in summary:
                trial.interrupted.append(name)
                if present:
                    trial.interrupted_mark_present.append(name)
            else:
                trial.problems.append(f"{name} failed: {summary}")
    if (root / "inbox" / "reply.txt").exists() or any((root / "inbox" / "processing").iterdir()):
        trial.problems.append("the reply was not archived")
    if [p.name for p in (root / "inbox" / "processed").iterdir()] != [f"{sid}_seq0001__reply.txt"]:
        trial.problems.append("the processed reply is not archived once")


@dataclass
class Campaign:
    """Totals over trials."""

    trials: list[Trial] = field(default_factory=list)

    def totals(self) -> dict[str, int]:
        return sum_trials(Trial, self.trials)


def run_campaign(root: Path, trials: int, *, commands: int = 6, seed: int = 23,
                 progress: bool = False) -> Campaign:
    """``trials`` trials under ``root`` (one directory each), kill points drawn from ``seed``."""
    rng = random.Random(seed)
    campaign = Campaign()
    for n in range(trials):
        trial = run_trial(root / f"trial-{n}", rng, commands=commands)
        campaign.trials.append(trial)
        if progress:
            print(f"trial {n}: {trial.summary()}", flush=True)
    return campaign
