"""The relay's policy: may this command of a reply run now? (issue 18; docs/relay.md "Policy").

Each session keeps a :mod:`codeloop.policy` preset (default ``permissive``, chosen when the
session starts). Each command runs through the relay's pipeline, whose POLICY step judges it
(``tools/relay_tools.py``, paths where their links lead): ``allow`` runs it; ``deny`` gives a
FAILED result saying why, and the command never runs; ``ask`` makes it a pending call in the
shared approvals store (:mod:`codeloop.policy.pending`, ``$CODELOOP_STATE_DIR/approvals.sqlite3``,
issue 34). A held command stops the reply there: the session file records a
:class:`HeldCommand` (where the reply stopped, and the store entry's id), the next outbox says
it is waiting, and nothing else runs until somebody answers through the store:
``codeloop relay approve|deny ID``, ``codeloop approvals approve|deny ID``, or any program
calling ``PendingStore.decide``. The answer is the store's alone (one compare-and-set: a second
answer is told who answered first), and the next step of the session finishes the reply.

Exactly once: an approved entry runs only after its claim (approved → running) succeeded, and
the step journal records the command like any other. An entry found claimed on a later step
(the relay stopped between the claim and the journal) is reported interrupted, never run again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codeloop.policy.pending import PendingCall, SqlitePendingStore
from codeloop.relay.commands import RelayCommand, RunCommand
from codeloop.relay.results import CommandResult
from codeloop.sessions.state_dir import approvals_db_path


@dataclass(frozen=True)
class HeldCommand:
    """Where a reply being applied stopped: its command waits for an answer in the store."""

    id: str
    """``{sequence}-{n}``: the outbox the reply answers and the command's 1-based position."""
    index: int
    """0-based position of the command in the reply."""
    command: str
    """What would run, for the person (the shell line, or ``DELETE_FILE "path"``)."""
    reason: str
    """Why the policy asks."""
    pending: str
    """The id of its entry in the approvals store, which alone holds the answer."""

    def to_json(self) -> dict[str, Any]:
        """The session-file form."""
        return {"id": self.id, "index": self.index, "command": self.command, "reason": self.reason,
                "pending": self.pending}

    @staticmethod
    def from_json(data: object) -> HeldCommand:
        """Read the session-file form; ``ValueError`` naming the bad field."""
        if not isinstance(data, dict):
            raise ValueError("field heldCommand must be an object")
        for key, kinds in (("id", str), ("index", int), ("command", str), ("reason", str), ("pending", str)):
            if not isinstance(data.get(key), kinds) or isinstance(data.get(key), bool):
                raise ValueError(f"field heldCommand.{key} is missing or has the wrong type")
        return HeldCommand(data["id"], data["index"], data["command"], data["reason"], data["pending"])


def approvals_store() -> SqlitePendingStore:
    """The store the relay's asks wait in, shared with ``codeloop run`` and ``codeloop approvals``."""
    return SqlitePendingStore(approvals_db_path())


def answered(cmd: RelayCommand, entry: PendingCall | None) -> CommandResult | bool | None:
    """What the store's entry of a held command says: True runs it (approved: the claim is
    taken when it runs), a result replaces it (denied, withdrawn, claimed by a step that
    stopped before recording it, or gone from the store), None means nobody has answered yet."""
    if entry is None:
        return CommandResult(cmd.name, False, "Not run: its approval is no longer in the approvals store "
                             f"({approvals_db_path()}); send the command again if it is still needed")
    match entry.status:
        case "pending":
            return None
        case "approved":
            return True
        case "denied":
            why = f": {entry.decision_reason}" if entry.decision_reason else ""
            return CommandResult(cmd.name, False, f"Not run: the person relaying for you denied it{why}")
        case "withdrawn":
            return CommandResult(cmd.name, False, f"Not run: its approval was withdrawn ({entry.decision_reason})")
    return interrupted(cmd)


def interrupted(cmd: RelayCommand) -> CommandResult:
    """The result of an approved command whose run was taken by a step that stopped before
    recording what it did: it may have run, so it is not run again."""
    return CommandResult(cmd.name, False, "Not run again: the relay stopped after this approved command was "
                         "taken to run and before its result was recorded, so it may have run; check what "
                         "it did before repeating it")


def hold(cmd: RelayCommand, index: int, sequence: int, reason: str, pending: str) -> HeldCommand:
    """The record of command ``index`` of the reply to outbox ``sequence``, held for approval
    as the store's entry ``pending``."""
    shown = cmd.command if isinstance(cmd, RunCommand) else f"{cmd.name} {getattr(cmd, 'path', '')!r}"
    return HeldCommand(f"{sequence}-{index + 1}", index, shown, reason, pending)


def waiting_result(cmd: RelayCommand, held: HeldCommand, after: int) -> CommandResult:
    """The line the waiting outbox shows for a held command."""
    rest = f"; the {after} command(s) after it wait too" if after else ""
    return CommandResult(cmd.name, False, f"Waiting for the person relaying for you to approve it "
                                          f"(approval {held.id}: {held.reason}); it has not run{rest}")
