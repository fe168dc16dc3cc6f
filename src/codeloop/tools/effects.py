"""What a tool declares it may do, and which workspace paths a call of it names (issue 30).

Every registered tool carries a :class:`ToolEffects` (``RegisteredTool.effects``): a set of
:class:`~codeloop.policy.approval.Effect` values (read, write, exec, network), a ``paths``
function giving the paths a call names (``file_path`` of write_file, the files of a patch, the
``paths`` of read_many_files), and for the tools that run a shell line in the workspace's
environment a ``command`` function giving that line. A tool that cannot say (MCP tools, whose
servers run elsewhere; ``shell``, whose command may touch any file) is :data:`WIDEST`: every
effect, paths unknown.

Whatever must know "does this call change files, and which" reads this declaration, never a
list of tool names: the pipeline puts it on the :class:`~codeloop.policy.approval.ToolCallRequest`
it builds (:meth:`ToolEffects.request`), where approval modes, plan mode, hooks' path matching,
diagnostics, the turn guards, codali's plan guard and the checkpoint seam read it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.policy.approval import ALL_EFFECTS, READ_ONLY, Effect, ToolCallRequest

__all__ = [
    "ALL_EFFECTS",
    "NO_EFFECTS",
    "WIDEST",
    "WRITES_FILE_PATH",
    "Effect",
    "ToolEffects",
    "argument_paths",
    "call_paths",
    "reads",
    "shell_line",
    "writes",
]

PathsOf = Callable[[Mapping[str, Any]], list[str]]
"""``paths(arguments)``: the workspace paths a call names, as given (relative or absolute)."""
CommandOf = Callable[[Mapping[str, Any]], str]
"""``command(arguments)``: the shell line a call runs in the workspace's environment."""


@dataclass(frozen=True)
class ToolEffects:
    """A tool's declaration: what its calls may do and which paths a call names."""

    effects: frozenset[Effect] = ALL_EFFECTS
    """What any call of the tool may do."""
    paths: PathsOf | None = None
    """The paths a given call names; None when the tool cannot say (it may touch any file)."""
    command: CommandOf | None = None
    """The shell line a call runs in the workspace's environment (``shell``, the relay's
    ``RUN_COMMAND``); None for tools that run none there (or cannot say which)."""

    def paths_of(self, arguments: Mapping[str, Any]) -> tuple[str, ...] | None:
        """The paths this call names exactly as given (deduplicated; a checkpoint must snapshot
        the file the tool will write), None when unknown. Never raises: arguments come from a
        model; what the function cannot read names no path."""
        if self.paths is None:
            return None
        try:
            found = self.paths(arguments)
        except Exception:  # a malformed argument names no path; VALIDATE has already judged it
            return ()
        return tuple(dict.fromkeys(p for p in found if isinstance(p, str) and p.strip()))

    def request(self, name: str, arguments: dict[str, Any], call_id: str | None = None) -> ToolCallRequest:
        """The call as the pipeline hands it on: its arguments with this declaration applied."""
        command = None
        if self.command is not None:
            with contextlib.suppress(Exception):
                command = self.command(arguments)
        return ToolCallRequest(name, arguments, call_id, self.effects, self.paths_of(arguments), command)


def argument_paths(*keys: str) -> PathsOf:
    """``paths`` of a tool whose path arguments are ``keys`` (a string or a list of strings each)."""

    def paths(arguments: Mapping[str, Any]) -> list[str]:
        found: list[str] = []
        for key in keys:
            value = arguments.get(key)
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, list):
                found += [v for v in value if isinstance(v, str)]
        return found

    return paths


WIDEST = ToolEffects()
"""A tool that cannot say: every effect, paths and command unknown (MCP tools, unknown tools)."""
NO_EFFECTS = ToolEffects(frozenset(), lambda arguments: [])
"""A tool that touches nothing itself (the subagent tools: a child's own calls go through the
pipeline with the parent's policy and checkpoints, each judged by its own declaration)."""


def reads(*keys: str) -> ToolEffects:
    """A read-only tool whose path arguments are ``keys`` (none: the workspace as a whole)."""
    return ToolEffects(READ_ONLY, argument_paths(*keys))


def writes(*keys: str) -> ToolEffects:
    """A tool that reads and writes the files its path arguments ``keys`` name."""
    return ToolEffects(frozenset({Effect.READ, Effect.WRITE}), argument_paths(*keys))


WRITES_FILE_PATH = writes("file_path")
"""A tool that reads and writes the one file its ``file_path`` names (write_file, edit_file)."""


def shell_line(key: str = "command") -> CommandOf:
    """``command`` of a tool whose ``key`` argument is a shell line (or an argv list)."""

    def command(arguments: Mapping[str, Any]) -> str:
        value = arguments.get(key)
        if isinstance(value, list):
            return " ".join(str(c) for c in value)
        return str(value or "")

    return command


def call_paths(call: ToolCallRequest, workspace: Path) -> list[str]:
    """The paths ``call`` names by its tool's declaration, relative to ``workspace`` when they
    lie in it (``./`` dropped), for matching them against globs (hooks' ``paths``, diagnostics,
    the turn guards); none when its tool cannot say (``shell``, MCP tools)."""
    relative = []
    for path in (p.strip() for p in call.paths or ()):
        if os.path.isabs(path):
            with contextlib.suppress(ValueError):
                path = Path(path).relative_to(workspace).as_posix()
        relative.append(path.removeprefix("./"))
    return relative
