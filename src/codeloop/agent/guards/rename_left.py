"""Turn guard: a rename the model began and left undone in the project's other files (issue 20).

Asked to "Rename the class Acct to Account across the project (bank.py, transfer.py and
main.py)", the 1.5B model replaced ``Acct`` in bank.py, then sent the same edit for
transfer.py, where the name occurs four times, so it was refused as ambiguous; it then
answered with codeloop's notes copied back, main.py untouched, and the program failed at
its import (dev task 30 at 7f04daa). Told what was left, it replied empty.

When the task asks to rename an identifier ``old`` to ``new`` (:func:`asked_renames`) and
the model's own edits this input brought ``new`` in, every reply without calls (an answer,
an empty reply, an echo) while ``old`` is still a whole word in a file of the project is
completed by the model's edit made in the next such file: ``edit_file`` with
``replace_all``, run through the pipeline (policy, approval, diff, events) and announced by
a ``warning`` event with code ``verify``; the model then answers again. The files looked
at: those the task names, and files with the extension of a file the model's edits
changed (up to :data:`.kept_definitions.MAX_PROJECT_FILES`), so a rename in Python files does not touch the README. A
file where ``old`` also occurs inside a longer name (``Acct`` in ``AcctType``) is not edited
by codeloop: the model is told the lines instead, once. Small-window sessions only
(``Session.small_model``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from codeloop.agent.claims import file_names
from codeloop.agent.guards.base import ACCEPT, GuardAction, Turn, TurnGuard, nudge, rescues_on, run_instead
from codeloop.agent.guards.kept_definitions import MAX_PROJECT_FILES, file_text, project_files, written_paths
from codeloop.agent.history import CallResult
from codeloop.agent.reply_reader import Reply
from codeloop.llm.types import ToolCall

if TYPE_CHECKING:
    from codeloop.agent.session import Session

_KINDS = ("function", "class", "method", "variable", "constant", "attribute", "field", "parameter",
          "argument", "type", "struct", "interface", "enum", "module", "symbol", "identifier", "name")
_RENAME = re.compile(
    r"\brenam(?:e|es|ed|ing)\s+(?:the\s+|all\s+|every\s+)?(?:(?:" + "|".join(_KINDS) + r")s?\s+)?"
    r"[`'\"]?(?P<old>[A-Za-z_]\w*)[`'\"]?\s+(?:to|into|as|->|→)\s+[`'\"]?(?P<new>[A-Za-z_]\w*)[`'\"]?",
    re.IGNORECASE)
_NOT_NAMES = frozenset({"it", "them", "this", "that", "these", "those", "the", "a", "an", "file", "files",
                        "everything", "all"})


def asked_renames(task: str) -> list[tuple[str, str]]:
    """The (old, new) identifier pairs ``task`` asks to rename, in order."""
    pairs: list[tuple[str, str]] = []
    for match in _RENAME.finditer(task):
        old, new = match.group("old"), match.group("new")
        if old != new and old.lower() not in _NOT_NAMES and new.lower() not in _NOT_NAMES \
                and (old, new) not in pairs:
            pairs.append((old, new))
    return pairs


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")


def left_lines(text: str, old: str) -> list[int]:
    """1-based numbers of the lines of ``text`` where ``old`` is a whole word."""
    word = _word(old)
    return [n for n, line in enumerate(text.splitlines(), 1) if word.search(line)]


def only_whole_words(text: str, old: str) -> bool:
    """True when every occurrence of ``old`` in ``text`` is a whole word (a plain replace of
    every occurrence then renames exactly that name)."""
    return text.count(old) == len(_word(old).findall(text))


class RenameLeft(TurnGuard):
    def __init__(self) -> None:
        self.renames: list[tuple[str, str]] = []
        self.begun: set[tuple[str, str]] = set()
        """Renames the model's own edits brought the new name in for."""
        self.suffixes: set[str] = set()
        """Extensions of the files the model's editing calls changed this input."""
        self.told: set[str] = set()
        self.made: set[str] = set()
        """Files codeloop made the rename in (once each: a failed edit is not tried again)."""

    def applies(self, session: Session) -> bool:
        return rescues_on(session) and session.profile.tool_registry.get("edit_file") is not None

    async def before_input(self, turn: Turn) -> str:
        self.renames = asked_renames(turn.task)
        return ""

    async def after_tools(self, calls: Sequence[ToolCall], results: Sequence[CallResult], turn: Turn) -> GuardAction:
        for call, result in zip(calls, results, strict=True):
            paths = [] if result.is_error else written_paths(turn.session, call)
            if not paths:
                continue
            self.suffixes |= {PurePosixPath(p).suffix for p in paths}
            written = str(call.arguments)
            self.begun |= {pair for pair in self.renames if _word(pair[1]).search(written)}
        return ACCEPT

    async def after_reply(self, reply: Reply, turn: Turn) -> GuardAction:
        if reply.calls or not self.begun:
            return ACCEPT
        for old, new in self.renames:
            if (old, new) not in self.begun:
                continue
            for path in await self._files(turn):
                if path in self.made:
                    continue
                text = await file_text(turn.session, path)
                if text is None or not left_lines(text, old):
                    continue
                if only_whole_words(text, old):
                    self.made.add(path)
                    call = ToolCall(f"rename-{uuid.uuid4().hex[:8]}", "edit_file",
                                    {"file_path": path, "old_string": old, "new_string": new, "replace_all": True})
                    return run_instead(call, f"the task asks to rename `{old}` to `{new}` and `{old}` is still in "
                                             f"{path}: codeloop makes the model's rename there")
                if path not in self.told:
                    self.told.add(path)
                    lines = ", ".join(map(str, left_lines(text, old)[:12]))
                    return nudge(f"The task asks to rename `{old}` to `{new}`, and {path} still uses `{old}` "
                                 f"(lines {lines}). Change those lines, then give your final answer.")
        return ACCEPT

    async def _files(self, turn: Turn) -> list[str]:
        named = [n.removeprefix("./") for n in file_names(turn.task)]
        found: list[str] = []
        for suffix in sorted(s for s in self.suffixes if s):
            found += await project_files(turn.session, f"**/*{suffix}")
        return list(dict.fromkeys([*named, *found]))[:MAX_PROJECT_FILES]
