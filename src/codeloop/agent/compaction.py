"""Compaction you can read and take back (issue 36).

When the history passes 70 % of the context window, the session replaces the oldest tool
outputs by a note (``History.shorten_oldest_results``). What was taken out is kept here, in
memory and, when the host gives a directory (``codeloop run`` gives the session's state
directory), on disk, one file per call, written atomically. The model reads one back with
the ``recall_output`` tool, offered from the first compaction on: the path resolver rightly
refuses codeloop's state directory to ordinary reads, so the tool is the way back in.

codeloop writes no summaries: a shortened output says what it was and how to get it back,
which keeps the rest of the conversation (the system prompt, AGENTS.md, the user's inputs,
the model's own replies) exactly as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeloop.environments.atomic import atomic_write
from codeloop.environments.base import ExecutionEnvironment
from codeloop.llm.types import ToolDefinition
from codeloop.tools.effects import NO_EFFECTS
from codeloop.tools.errors import ToolError
from codeloop.tools.registry import RegisteredTool, ToolContext

RECALL_TOOL = "recall_output"


@dataclass(frozen=True)
class Dropped:
    """One tool output compaction took out of the history."""

    turn: int
    """Index of its turn in the history."""
    call_id: str
    tool_name: str
    content: str
    """The output as the model saw it before (already truncated by the tool limits)."""


def shortened_note(tool_name: str, call_id: str) -> str:
    """What replaces a dropped output in the history."""
    return (f"[output of this earlier {tool_name} call removed to fit the context window; read it back with "
            f"{RECALL_TOOL}(call_id={call_id!r}), or run it again]")


class DroppedOutputs:
    """The outputs compaction took out, by call id (on disk too when ``directory`` is set)."""

    def __init__(self, directory: Path | None = None) -> None:
        self._kept: dict[str, Dropped] = {}
        self._on_disk: list[str] = []
        self._directory: Path | None = None
        self.directory = directory

    @property
    def directory(self) -> Path | None:
        """Where outputs are kept on disk (None: memory only)."""
        return self._directory

    @directory.setter
    def directory(self, directory: Path | None) -> None:
        # A resumed session finds what earlier runs dropped (read once: this is asked each round).
        self._directory = directory
        self._on_disk = sorted(p.stem for p in directory.glob("*.txt")) if directory and directory.is_dir() else []

    def __bool__(self) -> bool:
        return bool(self._kept or self._on_disk)

    def keep(self, dropped: Dropped) -> None:
        """Remember ``dropped``; written under ``directory`` before the history forgets it."""
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write(self.directory / _file_name(dropped.call_id), dropped.content.encode("utf-8"))
        self._kept[dropped.call_id] = dropped

    def get(self, call_id: str) -> str | None:
        """The output of ``call_id``, from memory, else from disk; None when never dropped."""
        if call_id in self._kept:
            return self._kept[call_id].content
        if self.directory is not None:
            path = self.directory / _file_name(call_id)
            if path.is_file():
                return path.read_text("utf-8")
        return None

    def ids(self) -> list[str]:
        """The call ids kept, oldest first."""
        return [*self._on_disk, *(i for i in self._kept if i not in self._on_disk)]


def _file_name(call_id: str) -> str:
    # A call id comes from the model: only a safe spelling becomes a file name.
    return re.sub(r"[^A-Za-z0-9_.-]", "_", call_id)[:120].lstrip(".") + ".txt"


def recall_tool(outputs: DroppedOutputs) -> RegisteredTool:
    """``recall_output(call_id)``: the output of an earlier call that compaction removed."""

    async def recall(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
        call_id = args["call_id"]
        text = outputs.get(call_id)
        if text is None:
            known = ", ".join(outputs.ids()) or "none"
            raise ToolError(f"No removed output has call_id {call_id!r}. Removed outputs: {known}.")
        return text

    return RegisteredTool(ToolDefinition(
        RECALL_TOOL, "Read back the output of an earlier tool call that was removed from the conversation "
                     "to fit the context window (its place says the call_id).", {
            "type": "object",
            "properties": {"call_id": {"type": "string", "description": "The call_id named where the output was."}},
            "required": ["call_id"],
        }), recall, effects=NO_EFFECTS)  # reads codeloop's own record, never the workspace
