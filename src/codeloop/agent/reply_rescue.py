"""A small model's reply read for what it meant (issue 20), after :class:`.ReplyReader`.

Two rescues that need the workspace, for local / small-window sessions only:

- **A tool named like a file or a wish.** ``<tool name="app.py">`` (or ``app``, or
  ``{"name": "app.json", ...}``): when the name is a file of the workspace (by path, by file
  name elsewhere, or by name without its extension, found once) or a new file's name, and
  the call holds content (a ``content``-like argument, one fenced block, or the body
  itself), the call is what that content means for the file (:mod:`.file_edits`: a write,
  or an edit of the definitions it redefines). Without content, or when the meaning is
  ambiguous, the model gets the exact valid calls for that file instead of "Unknown tool".
  A name that is no file is a wish: with a complete equivalent call (``delete_file`` of
  ``obsolete.txt``: the shell's ``rm -- obsolete.txt``) it is that call; otherwise
  (``rename_symbol``) the model gets the exact form of the closest tools.
- **A file name followed by a fenced block** in a reply without calls (:mod:`.named_blocks`)
  is the same change of that file; so is a file's listing in the numbered form codeloop
  shows files in, copied back changed. A listing that ends before the file does (a copied
  view of its first lines) is no change, and neither is a listing the model was sent in this
  input (the task's files as they were before its own edits).

The calls made here are ordinary calls: the session runs them through the pipeline (policy,
approval, checkpoints, events, diffs). Answers are calls carrying ``parse_error``, returned
to the model as error results. Nothing here raises for anything the model wrote.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from codeloop.agent.call_forms import CallForms
from codeloop.agent.file_edits import lines_of, plan_file_edit, plausible_content
from codeloop.agent.named_blocks import (
    NamedBlock,
    fenced_bodies,
    file_extension,
    named_blocks,
    numbered_listings,
)
from codeloop.agent.reply_reader import Reply
from codeloop.agent.text_tool_calls import Schemas, new_call_id, tagged_params
from codeloop.environments.base import ExecutionEnvironment
from codeloop.llm.types import ToolCall
from codeloop.tools.edit import EDIT_FILE
from codeloop.tools.files import READ_FILE, WRITE_FILE
from codeloop.tools.suggestions import closest_tools, equivalent_call, meant_call

FENCED_EDITS, MISNAMED_CALLS = "file edits from fenced blocks", "misnamed calls"
"""Notes added to a rescued :class:`Reply`."""
CONTENT_KEYS = ("content", "code", "text", "new_content", "file_content", "contents", "source", "body")
"""Arguments of a misnamed call that hold a file's content."""
MATCHES_SHOWN = 5
"""Files listed when a name without extension matches several."""
CUT_SHORT_LINES = 3
"""A numbered listing missing this many of the file's last lines is a copied view, no change."""

_NAME = re.compile(r"[\w.][\w./-]*")


@dataclass(frozen=True)
class Written:
    """What a call to an unknown tool said: its name, its arguments and its body (tags only)."""

    name: str
    arguments: Mapping[str, Any]
    body: str | None


def what_was_written(call: ToolCall, schemas: Schemas) -> Written | None:
    """The unknown tool ``call`` asked for (however it was written), None for a known one."""
    if call.parse_error is None:
        return None if call.name in schemas else Written(call.name, call.arguments, None)
    raw = call.raw_arguments or ""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        name, args = value.get("tool", value.get("name")), value.get("arguments", value.get("parameters"))
        if not isinstance(name, str) or name in schemas:
            return None
        return Written(name, args if isinstance(args, dict) else {}, None)
    return None if call.name in schemas else Written(call.name, tagged_params(raw), raw)


def content_of(written: Written, path: str) -> str | None:
    """The file content a misnamed call holds, None when it holds none (or several blocks)."""
    for key in CONTENT_KEYS:
        value = written.arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value if value.endswith("\n") else value + "\n"
    body = written.body
    if body is None or written.arguments:
        return None
    blocks = fenced_bodies(body)
    text = blocks[0] if len(blocks) == 1 else None if blocks else body.removeprefix("\n")
    if text is None or not plausible_content(path, text):
        return None
    return text if text.endswith("\n") else text + "\n"


@dataclass(frozen=True)
class ReplyRescue:
    """Rescues replies for one set of tools, writing answers in one call syntax."""

    schemas: Schemas
    forms: CallForms
    prompt: str = ""
    """The system prompt: its own example block, copied into a reply, is no change."""
    shown: str = ""
    """The user turn of this input as the model saw it: a file listing copied from it is no change."""

    async def rescue(self, reply: Reply, env: ExecutionEnvironment) -> Reply:
        """``reply`` with misnamed calls understood or answered and, when it has no call, its
        named fenced blocks as calls; ``reply`` itself when there is nothing to rescue."""
        if reply.calls:
            calls: list[ToolCall] = []
            for call in reply.calls:
                calls += await self._misnamed(call, env) or [call]
            if calls == list(reply.calls):
                return reply
            return dataclasses.replace(reply, calls=tuple(calls), recovered=True, notes=(*reply.notes, MISNAMED_CALLS))
        made = await self._from_blocks(reply.text, env) if reply.text else []
        if not made:
            return reply
        return dataclasses.replace(reply, calls=tuple(made), recovered=True, notes=(*reply.notes, FENCED_EDITS))

    async def _from_blocks(self, text: str, env: ExecutionEnvironment) -> list[ToolCall]:
        blocks = sorted([*named_blocks(text), *numbered_listings(text)], key=lambda b: b.start)
        last = {block.path: block for block in blocks}  # a file shown twice: its last version
        examples = _examples(self.prompt) | _examples(self.shown)
        made: list[ToolCall] = []
        for block in last.values():
            if (block.path, block.content) in examples or not plausible_content(block.path, block.content):
                continue
            if not file_extension(block.path) and not await _is_file(env, block.path):
                continue
            if block.numbered and await _cut_short(env, block):
                continue
            made += await self._change(block.path, block.content, env, None)
        return made

    async def _change(self, path: str, content: str, env: ExecutionEnvironment, instead: ToolCall | None,
                      ) -> list[ToolCall]:
        """The calls giving ``path`` that ``content`` (``instead``'s id on the first), or an
        answer saying why not; none when the file already holds it and nothing is replaced."""
        plan = await plan_file_edit(path, content, env, self.schemas, self.forms)
        if plan.problem:
            return [_answer(instead, plan.problem, WRITE_FILE)]
        if not plan.calls and instead is not None:
            return [_answer(instead, f"{path} already holds exactly that content: nothing to change. "
                                     + self._file_forms(path, exists=True), instead.name)]
        made = [ToolCall(new_call_id(), name, args, json.dumps(args)) for name, args in plan.calls]
        if instead is not None and made:
            made[0] = dataclasses.replace(made[0], id=instead.id)
        return made

    async def _misnamed(self, call: ToolCall, env: ExecutionEnvironment) -> list[ToolCall] | None:
        written = what_was_written(call, self.schemas)
        if written is None or not _NAME.fullmatch(written.name) or len(written.name) > 255:
            return None
        found = await _files_named(env, written.name)
        if len(found) > 1:
            listed = ", ".join(found[:MATCHES_SHOWN])
            return [_answer(call, f"Unknown tool: {written.name}. These files have that name: {listed}. "
                                  + self._file_forms(found[0], exists=True))]
        path = found[0] if found else written.name if file_extension(written.name) else None
        if path is None:
            meant = meant_call(written.name, dict(written.arguments), self.schemas)
            if meant is not None:  # delete_file(obsolete.txt): the shell's `rm -- obsolete.txt`
                return [ToolCall(call.id, meant[0], meant[1], json.dumps(meant[1]))]
            return [_answer(call, self._wish(written, call.parse_error))]
        content = content_of(written, path)
        if content is not None:
            return await self._change(path, content, env, call)
        return [_answer(call, f"Unknown tool: {written.name}. {path} is a file"
                              + ("" if found else " name") + ". " + self._file_forms(path, exists=bool(found)))]

    def _file_forms(self, path: str, *, exists: bool) -> str:
        """The exact calls that read, replace and change ``path`` (create it, when it does not exist)."""
        forms: list[str] = []
        if exists and READ_FILE in self.schemas:
            forms += ["To read it:", self.forms.spell(READ_FILE, {"file_path": path})]
        if WRITE_FILE in self.schemas:
            forms += ["To replace its content:" if exists else "To create it:",
                      self.forms.spell(WRITE_FILE, {"file_path": path, "content": "THE WHOLE NEW CONTENT"})]
        if exists and EDIT_FILE in self.schemas:
            forms += ["To change a part of it:", self.forms.spell(
                EDIT_FILE, {"file_path": path, "old_string": "OLD TEXT", "new_string": "NEW TEXT"})]
        return "\n".join(forms)

    def _wish(self, written: Written, said: str | None) -> str:
        """The answer to a call of a tool that does not exist and names no file: what the
        reader ``said`` (or "Unknown tool"), plus the exact form of the closest tools."""
        text = said or f"Unknown tool: {written.name}. Available tools: {', '.join(sorted(self.schemas))}."
        equivalent = equivalent_call(written.name, dict(written.arguments), self.schemas)
        if equivalent is not None:  # the reader's answer already spells it out
            return text if said else f"{text} To do that, call {equivalent[0]}:\n{self.forms.spell(*equivalent)}"
        closest = closest_tools(written.name, self.schemas) or [name for name in (READ_FILE,) if name in self.schemas]
        if not closest:
            return text
        return (f"{text} The closest: {' and '.join(closest)}. Write the call exactly like this:\n"
                + "\n".join(self.forms.template(name) for name in closest))


@functools.lru_cache(maxsize=8)
def _examples(prompt: str) -> frozenset[tuple[str, str]]:
    """The (file, content) blocks a system prompt shows as examples; parsed once per prompt,
    not once per reply."""
    return frozenset((b.path, b.content) for b in [*named_blocks(prompt), *numbered_listings(prompt)])


async def _cut_short(env: ExecutionEnvironment, listing: NamedBlock) -> bool:
    """True when the listing leaves out the file's last lines (three or more): the model copied
    a view of its first lines (a long file is shown cut), and writing it would drop the rest."""
    try:
        old = lines_of(await env.read_file(listing.path))
    except Exception:  # no such file (a new one) or none the environment gives: nothing to drop
        return False
    new = lines_of(listing.content)
    tag, i1, i2, j1, j2 = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()[-1]
    return tag in ("delete", "replace") and i2 == len(old) and (i2 - i1) - (j2 - j1) >= CUT_SHORT_LINES


def _answer(call: ToolCall | None, message: str, name: str = "") -> ToolCall:
    """An error result for the model, in the place of ``call`` (its id, so histories pair up)."""
    if call is None:
        return ToolCall(new_call_id(), name, {}, None, parse_error=message)
    return ToolCall(call.id, call.name, {}, call.raw_arguments, parse_error=message)


async def _is_file(env: ExecutionEnvironment, path: str) -> bool:
    try:
        return await env.file_exists(path) and not (await env.stat(path)).is_dir
    except Exception:  # a path the environment refuses is no file of the workspace
        return False


async def _files_named(env: ExecutionEnvironment, name: str) -> list[str]:
    """Workspace files ``name`` can mean: itself; else the files of that file name anywhere
    (a name with an extension) or of that name plus any extension (one without)."""
    if await _is_file(env, name):
        return [name]
    if any(c in name for c in "*?[]{}"):
        return []
    base = name.rstrip("/").rsplit("/", 1)[-1]
    if not base or base in (".", ".."):
        return []
    pattern = f"**/{base}" if file_extension(base) else f"**/{base}.*"
    try:
        found = await env.glob(pattern)
    except Exception:  # an environment that cannot search finds nothing
        return []
    if not file_extension(base):
        found = [p for p in found if p.rsplit("/", 1)[-1].rsplit(".", 1)[0] == base]
    return sorted(found)
