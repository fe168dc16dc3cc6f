"""The relay's policy: may this command of a reply run now? (issue 18; docs/relay.md "Policy").

Each session keeps a :mod:`codeloop.policy` preset (default ``permissive``, chosen when the
session starts). Each command runs through the relay's pipeline, whose POLICY step judges it
(``tools/relay_tools.py``, paths where their links lead): ``allow`` runs it; ``deny`` gives a
FAILED result saying why, and the command never runs; ``ask`` holds it (:func:`hold`). A held command stops the reply there: the session file records a
:class:`HeldCommand`, the next outbox says it is waiting, and nothing else runs until the
person answers with ``codeloop relay approve ID`` or ``deny ID``. The answer is saved in
the session file before the reply continues, and the step journal records the command
like any other, so an approved command runs exactly once, even across a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from codeloop.relay.commands import RelayCommand, RunCommand
from codeloop.relay.results import CommandResult


@dataclass(frozen=True)
class HeldCommand:
    """A command of the reply being applied, held for the person's approval."""

    id: str
    """``{sequence}-{n}``: the outbox the reply answers and the command's 1-based position."""
    index: int
    """0-based position of the command in the reply."""
    command: str
    """What would run, for the person (the shell line, or ``DELETE_FILE "path"``)."""
    reason: str
    """Why the policy asks."""
    answer: Literal["approved", "denied"] | None = None
    """The person's answer, saved before the reply continues."""
    note: str | None = None
    """The reason given with ``deny --reason``."""

    def to_json(self) -> dict[str, Any]:
        """The session-file form."""
        return {"id": self.id, "index": self.index, "command": self.command, "reason": self.reason,
                "answer": self.answer, "note": self.note}

    @staticmethod
    def from_json(data: object) -> HeldCommand:
        """Read the session-file form; ``ValueError`` naming the bad field."""
        if not isinstance(data, dict):
            raise ValueError("field heldCommand must be an object")
        for key, kinds in (("id", str), ("index", int), ("command", str), ("reason", str),
                           ("note", (str, type(None)))):
            if not isinstance(data.get(key), kinds) or isinstance(data.get(key), bool):
                raise ValueError(f"field heldCommand.{key} is missing or has the wrong type")
        if data.get("answer") not in ("approved", "denied", None):
            raise ValueError("field heldCommand.answer must be approved, denied or null")
        return HeldCommand(data["id"], data["index"], data["command"], data["reason"], data.get("answer"),
                           data["note"])


def answered(cmd: RelayCommand, index: int, held: HeldCommand | None) -> CommandResult | bool:
    """The person's answer for command ``index`` of the reply: True runs it without asking the
    policy again (approved), a result replaces it (denied), False means no answer (the
    pipeline's POLICY step judges it)."""
    if held is None or held.index != index or held.answer is None:
        return False
    if held.answer == "approved":
        return True
    why = f": {held.note}" if held.note else ""
    return CommandResult(cmd.name, False, f"Not run: the person relaying for you denied it{why}")


def hold(cmd: RelayCommand, index: int, sequence: int, reason: str) -> HeldCommand:
    """The record of command ``index`` of the reply to outbox ``sequence``, held for approval."""
    shown = cmd.command if isinstance(cmd, RunCommand) else f"{cmd.name} {getattr(cmd, 'path', '')!r}"
    return HeldCommand(f"{sequence}-{index + 1}", index, shown, reason)


def waiting_result(cmd: RelayCommand, held: HeldCommand, after: int) -> CommandResult:
    """The line the waiting outbox shows for a held command."""
    rest = f"; the {after} command(s) after it wait too" if after else ""
    return CommandResult(cmd.name, False, f"Waiting for the person relaying for you to approve it "
                                          f"(approval {held.id}: {held.reason}); it has not run{rest}")
