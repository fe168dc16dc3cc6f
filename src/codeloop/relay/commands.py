"""The commands a model can send in an inbox file (relay spec, "Command Syntax Reference").

Parsing turns untrusted text into these values; a malformed block becomes a
:class:`ParseError` value, never an exception, so it can be reported to the model in the
next outbox (spec "Error Handling / Parse Errors").

``line`` is the 1-based line of the opening tag in the inbox file. It is excluded from
equality so that two parses of equivalent text compare equal wherever the blocks sit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Final

COMMAND_NAMES: Final = ("CREATE_FILE", "EDIT_FILE", "DELETE_FILE", "READ_FILE", "RUN_COMMAND", "MESSAGE",
                        "DONE")
"""The seven tag names of protocol version 1.0."""

SELF_CLOSING: Final = frozenset({"DELETE_FILE", "READ_FILE"})
"""Commands without a body or closing tag."""


@dataclass(frozen=True)
class _Located:
    """What every command carries besides its payload."""

    line: int = field(default=0, compare=False, kw_only=True)
    """Line of the opening tag in the inbox file."""


@dataclass(frozen=True)
class _OnPath(_Located):
    """A command on one file."""

    path: str
    """Workspace-relative path, as written by the model."""


@dataclass(frozen=True)
class CreateFile(_OnPath):
    """``[CREATE_FILE path="..."]``: create or overwrite a file, creating parents."""

    content: str
    """The body verbatim: every body line with its own line terminator."""
    name: ClassVar[str] = "CREATE_FILE"


@dataclass(frozen=True)
class EditFile(_OnPath):
    """``[EDIT_FILE path start_line end_line]``: replace lines start..end (1-based, inclusive)."""

    start_line: int
    """First line replaced (1-based)."""
    end_line: int
    """Last line replaced (1-based, inclusive)."""
    content: str
    """Replacement lines, verbatim; may hold more or fewer lines than the range, or none."""
    name: ClassVar[str] = "EDIT_FILE"


@dataclass(frozen=True)
class DeleteFile(_OnPath):
    """``[DELETE_FILE path="..."]``: delete one file."""

    name: ClassVar[str] = "DELETE_FILE"


@dataclass(frozen=True)
class ReadFile(_OnPath):
    """``[READ_FILE path="..."]``: put the file's contents into the next outbox."""

    name: ClassVar[str] = "READ_FILE"


@dataclass(frozen=True)
class RunCommand(_Located):
    """``[RUN_COMMAND]``: run the body with ``/bin/sh -c`` in the workspace."""

    command: str
    """The body without its final line terminator."""
    name: ClassVar[str] = "RUN_COMMAND"


@dataclass(frozen=True)
class Message(_Located):
    """``[MESSAGE]``: text shown to the user."""

    text: str
    """The body without its final line terminator."""
    name: ClassVar[str] = "MESSAGE"


@dataclass(frozen=True)
class Done(_Located):
    """``[DONE]``: the task is complete; the body summarises it and the session ends."""

    summary: str
    """The body without its final line terminator."""
    name: ClassVar[str] = "DONE"


@dataclass(frozen=True)
class ParseError(_Located):
    """A malformed block (the spec's ``ErrorCommand``): reported, never executed."""

    command: str
    """The tag name of the malformed block (``EDIT_FILE``)."""
    message: str
    """What is wrong and how to write it instead."""

    @property
    def name(self) -> str:
        """The tag name, so results can be labelled like those of valid commands."""
        return self.command


RelayCommand = CreateFile | EditFile | DeleteFile | ReadFile | RunCommand | Message | Done | ParseError
"""Everything :func:`codeloop.relay.parser.parse_inbox` can return, in order of appearance."""
