"""The relay face: a model in any web chat drives a workspace through outbox/inbox text
files (``specs/relay-copy-paste-protocol.md``); the user copies and pastes.

Library use::

    import asyncio
    from codeloop.relay import load_config, start_session, step

    config = load_config("/tmp/relay")
    state, outbox = asyncio.run(start_session(config, "add a README"))
    # ... paste ``outbox`` into a chat, save the reply in config.inbox_dir ...
    report = asyncio.run(step(config))

``parse_inbox`` / ``serialize_commands`` convert between inbox text and command values.
"""

from __future__ import annotations

from codeloop.relay.commands import (
    CreateFile,
    DeleteFile,
    Done,
    EditFile,
    Message,
    ParseError,
    ReadFile,
    RelayCommand,
    RunCommand,
)
from codeloop.relay.config import RelayConfig, RelayConfigError, load_config
from codeloop.relay.engine import RelayError, StepReport, resume, start_session, step
from codeloop.relay.outbox_texts import PROTOCOL_VERSION
from codeloop.relay.parser import parse_inbox
from codeloop.relay.results import CommandResult
from codeloop.relay.serializer import serialize_commands
from codeloop.relay.session import SessionState

__all__ = [
    "PROTOCOL_VERSION", "CommandResult", "CreateFile", "DeleteFile", "Done", "EditFile", "Message",
    "ParseError", "ReadFile", "RelayCommand", "RelayConfig", "RelayConfigError", "RelayError", "RunCommand",
    "SessionState", "StepReport", "load_config", "parse_inbox", "resume", "serialize_commands",
    "start_session", "step",
]
