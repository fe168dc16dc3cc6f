"""The relay's policy: may this command of a reply run now? (issue 18; docs/relay.md "Policy").

Each session keeps a :mod:`codeloop.policy` preset (default ``permissive``, chosen when the
session starts). Right before a command would run, :func:`gate` judges it: ``allow`` runs
it; ``deny`` gives a FAILED result saying why, and the command never runs; ``ask`` holds
it. A held command stops the reply there: the session file records a
:class:`HeldCommand`, the next outbox says it is waiting, and nothing else runs until the
person answers with ``codeloop relay approve ID`` or ``deny ID``. The answer is saved in
the session file before the reply continues, and the step journal records the command
like any other, so an approved command runs exactly once, even across a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from codeloop.policy import Decision, Policy, evaluate_command, evaluate_path, preset
from codeloop.relay.commands import CreateFile, DeleteFile, EditFile, ReadFile, RelayCommand, RunCommand
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


def judge(cmd: RelayCommand, policy: Policy) -> Decision:
    """The policy's decision on one command (MESSAGE, DONE and parse errors always pass)."""
    match cmd:
        case RunCommand():
            return evaluate_command(cmd.command, policy.shell, policy.network)
        case CreateFile():
            return evaluate_path(cmd.path, "write", policy.filesystem, len(cmd.content.encode("utf-8")))
        case EditFile():
            return evaluate_path(cmd.path, "write", policy.filesystem)
        case DeleteFile():
            return evaluate_path(cmd.path, "delete", policy.filesystem)
        case ReadFile():
            return evaluate_path(cmd.path, "read", policy.filesystem)
    return Decision.allow()


def gate(cmd: RelayCommand, index: int, sequence: int, policy_name: str,
         held: HeldCommand | None) -> CommandResult | HeldCommand | None:
    """Called right before command ``index`` of the reply to outbox ``sequence`` runs:
    ``None`` runs it, a result replaces it (refused), a :class:`HeldCommand` holds it."""
    if held is not None and held.index == index and held.answer is not None:
        if held.answer == "approved":
            return None
        why = f": {held.note}" if held.note else ""
        return CommandResult(cmd.name, False, f"Not run: the person relaying for you denied it{why}")
    decision = judge(cmd, preset(policy_name))
    if decision.action == "allow":
        return None
    if decision.action == "deny":
        fix = f" ({decision.suggestion})" if decision.suggestion else ""
        return CommandResult(cmd.name, False,
                             f"Not run: the relay policy '{policy_name}' refuses it: {decision.reason}{fix}")
    shown = cmd.command if isinstance(cmd, RunCommand) else f"{cmd.name} {getattr(cmd, 'path', '')!r}"
    return HeldCommand(f"{sequence}-{index + 1}", index, shown, decision.reason)


def waiting_result(cmd: RelayCommand, held: HeldCommand, after: int) -> CommandResult:
    """The line the waiting outbox shows for a held command."""
    rest = f"; the {after} command(s) after it wait too" if after else ""
    return CommandResult(cmd.name, False, f"Waiting for the person relaying for you to approve it "
                                          f"(approval {held.id}: {held.reason}); it has not run{rest}")
