"""The step journal: what was applied for which sequence (crash idempotence).

One append-only JSON-lines file per answered outbox,
``{journal_dir}/{sessionId}_seq{NNNN}.jsonl``. The first line names the reply; then, for
a command index of the reply, a ``begun`` line (with the
:class:`~codeloop.relay.executor.Effect` about to happen) and a ``done`` line (with the
result). Every line is flushed to disk (``fsync``) before the call returns, so an effect
never happens before its ``begun`` line is durable. A crash can only tear the last line,
which is then dropped: a torn ``begun`` means the effect never started, a torn ``done``
leaves the command ``begun`` and recovery checks it.

A rerun after a crash replays ``done`` results, asks
:func:`~codeloop.relay.executor.recover_effect` about ``begun`` ones, and executes the
rest, so no command is applied twice and no finished result is lost. Appending keeps the
cost linear in the reply (results can hold 4000 characters of output each). Journals stay
after the step as the record of what each reply did.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.environments.atomic import atomic_write
from codeloop.relay.executor import Effect
from codeloop.relay.results import CommandResult


class JournalError(ValueError):
    """A journal file is damaged; the message names it."""


@dataclass(frozen=True)
class JournalEntry:
    """The state of one command of the reply."""

    effect: Effect | None
    """The change announced before it happened (None for commands without one)."""
    result: CommandResult | None
    """The final result once done; None while only begun."""


def journal_path(journal_dir: Path, session_id: str, sequence: int) -> Path:
    """Where the journal of the reply to outbox ``sequence`` lives."""
    return journal_dir / f"{session_id}_seq{sequence:04d}.jsonl"


class StepJournal:
    """The journal of one reply; every mutation is durable before it returns."""

    def __init__(self, path: Path, session_id: str, sequence: int, source: str) -> None:
        self.path = path
        self.session_id = session_id
        self.sequence = sequence
        self.source = source
        """The inbox file name the reply came from."""
        self.entries: dict[int, JournalEntry] = {}

    @classmethod
    def open(cls, journal_dir: Path, session_id: str, sequence: int, source: str) -> StepJournal:
        """Load the journal of ``(session_id, sequence)`` or start an empty one."""
        journal = cls(journal_path(journal_dir, session_id, sequence), session_id, sequence, source)
        try:
            raw = journal.path.read_bytes()
        except FileNotFoundError:
            return journal
        if not raw.endswith(b"\n"):
            # A crash tore the last line; drop it so that later appends start a fresh line.
            raw = raw[: raw.rfind(b"\n") + 1]
            os.truncate(journal.path, len(raw))
        for number, line in enumerate(raw.split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                journal._replay(json.loads(line))
            except (ValueError, KeyError, TypeError) as exc:
                raise JournalError(f"the step journal {journal.path} is damaged at line {number} ({exc}); "
                                   "move it away to redo this reply") from None
        return journal

    def _replay(self, item: dict[str, Any]) -> None:
        if "index" not in item:
            return  # the header line
        index = int(item["index"])
        if item["state"] == "begun":
            self.entries[index] = JournalEntry(Effect.from_json(item["effect"]), None)
        else:
            self._set_done(index, CommandResult.from_json(item["result"]))

    @property
    def applied(self) -> int:
        """How many commands are done."""
        return sum(1 for e in self.entries.values() if e.result is not None)

    def begin(self, index: int, effect: Effect) -> None:
        """Record that command ``index`` is about to make ``effect``."""
        self.entries[index] = JournalEntry(effect, None)
        self._append({"index": index, "state": "begun", "effect": effect.to_json()})

    def done(self, index: int, result: CommandResult) -> None:
        """Record the final result of command ``index``."""
        self._set_done(index, result)
        self._append({"index": index, "state": "done", "result": result.to_json()})

    def _set_done(self, index: int, result: CommandResult) -> None:
        previous = self.entries.get(index)
        self.entries[index] = JournalEntry(previous.effect if previous else None, result)

    def _append(self, item: dict[str, Any]) -> None:
        line = (json.dumps(item, ensure_ascii=False) + "\n").encode("utf-8")
        if not self.path.exists():
            # Created whole with its header by the shared atomic write (which also makes the
            # directory entry durable); afterwards lines are appended.
            header = {"sessionId": self.session_id, "sequence": self.sequence, "source": self.source}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, (json.dumps(header, ensure_ascii=False) + "\n").encode("utf-8") + line)
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
