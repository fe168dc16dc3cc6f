"""The step journal: what was applied for which sequence (crash idempotence).

One file per answered outbox, ``{journal_dir}/{sessionId}_seq{NNNN}.json``, replaced
atomically at every change. For each command index of the reply it records either
``begun`` (with the :class:`~codeloop.relay.executor.Effect` about to happen) or ``done``
(with the result). A rerun after a crash replays ``done`` results, asks
:func:`~codeloop.relay.executor.recover_effect` about ``begun`` ones, and executes the
rest, so no command is applied twice and no finished result is lost. Journals stay after
the step as the record of what each reply did.
"""

from __future__ import annotations

import json
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


class StepJournal:
    """The journal of one reply; every mutation is persisted before it returns."""

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
        path = journal_dir / f"{session_id}_seq{sequence:04d}.json"
        journal = cls(path, session_id, sequence, source)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return journal
        try:
            data = json.loads(raw)
            for item in data["entries"]:
                effect = Effect.from_json(item["effect"]) if item.get("effect") else None
                result = CommandResult.from_json(item["result"]) if item.get("result") else None
                journal.entries[int(item["index"])] = JournalEntry(effect, result)
        except (ValueError, KeyError, TypeError) as exc:
            raise JournalError(
                f"the step journal {path} is damaged ({exc}); move it away to redo this reply"
            ) from None
        return journal

    @property
    def applied(self) -> int:
        """How many commands are done."""
        return sum(1 for e in self.entries.values() if e.result is not None)

    def begin(self, index: int, effect: Effect) -> None:
        """Record that command ``index`` is about to make ``effect``."""
        self.entries[index] = JournalEntry(effect, None)
        self._save()

    def done(self, index: int, result: CommandResult) -> None:
        """Record the final result of command ``index``."""
        previous = self.entries.get(index)
        self.entries[index] = JournalEntry(previous.effect if previous else None, result)
        self._save()

    def _save(self) -> None:
        entries: list[dict[str, Any]] = []
        for index in sorted(self.entries):
            entry = self.entries[index]
            item: dict[str, Any] = {"index": index, "state": "done" if entry.result else "begun"}
            if entry.effect is not None:
                item["effect"] = entry.effect.to_json()
            if entry.result is not None:
                item["result"] = entry.result.to_json()
            entries.append(item)
        data = {
            "sessionId": self.session_id,
            "sequence": self.sequence,
            "source": self.source,
            "entries": entries,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"))
