"""The ``apply_patch`` tool (loop spec §3.4, Appendix A): codex's v4a patches.

:func:`apply_patch_text` parses and applies a patch in an environment and returns the
outcome; the tool and ``codeloop apply-patch`` both call it, so they behave alike. A
patch is one change: every file of it is written, or none (see ``patch_apply``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial as partial_call
from typing import Any

from codeloop.environments.base import ExecutionEnvironment
from codeloop.tools.effects import Effect, ToolEffects
from codeloop.tools.errors import PatchError
from codeloop.tools.files import SEEN_FILES
from codeloop.tools.patch_apply import PatchApplyError, PatchOutcome, apply_hunks
from codeloop.tools.patch_parser import AddFile, DeleteFile, UpdateFile, parse_patch
from codeloop.tools.registry import RegisteredTool, ToolContext, ToolOutput, make_tool
from codeloop.tools.workspace_ops import fingerprint

APPLY_PATCH_DESCRIPTION = """\
Apply code changes using the patch format. Supports creating, deleting, and modifying files \
in a single operation.

The patch is wrapped in `*** Begin Patch` / `*** End Patch`. Each file operation starts with \
a header:
*** Add File: <path>      every following line starts with `+` (the new file's content)
*** Delete File: <path>   nothing follows
*** Update File: <path>   optionally `*** Move to: <new path>`, then one or more hunks

Each hunk starts with `@@` (optionally followed by a line such as a function signature that \
appears above the change), then lines prefixed with ` ` (unchanged context), `-` (removed) \
or `+` (added). Show 3 lines of context above and below each change. Use \
`*** End of File` after a hunk that must match the end of the file. Paths are relative to \
the workspace root.

Example:
*** Begin Patch
*** Update File: src/app.py
@@ def main():
     print("Hello")
-    return 0
+    return 1
*** End Patch"""

async def apply_patch_text(
    env: ExecutionEnvironment, text: str, *, partial: bool = False, ctx: ToolContext | None = None
) -> PatchOutcome:
    """Parse and apply ``text`` all or nothing (``partial=True``: hunk by hunk, as codex's
    standalone binary does); raise ``PatchParseError`` or ``PatchApplyError``. With the
    ``ctx`` of a session, a file that changed since the session last read or wrote it
    refuses the patch (``files.SeenFiles``), and the files written count as seen."""
    session = ctx if ctx is not None and ctx.session_id is not None else None
    check = None if session is None else partial_call(SEEN_FILES.check_unchanged, session, env)
    try:
        outcome = await apply_hunks(env, parse_patch(text).hunks, partial=partial, check=check,
                                    before_change=ctx.before_change if ctx is not None else None)
    except PatchApplyError as exc:
        _saw_written(session, env, exc.partial)
        raise
    _saw_written(session, env, outcome)
    return outcome


def _saw_written(ctx: ToolContext | None, env: ExecutionEnvironment, outcome: PatchOutcome) -> None:
    if ctx is None:
        return
    for path, data in outcome.written.items():
        if data is None:
            SEEN_FILES.forget(ctx, env, path)
        else:
            SEEN_FILES.saw(ctx, env, path, fingerprint(data))


async def _run_apply_patch(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
    try:
        outcome = await apply_patch_text(env, args["patch"], ctx=ctx)
    except PatchApplyError as exc:
        text = exc.message
        if not exc.partial.empty:
            done = exc.partial.summary().split("\n", 1)[1].strip().replace("\n", ", ")
            text += f"\n(The patch stopped here; earlier operations were applied: {done}.)"
        return ToolOutput(text, is_error=True)
    return ToolOutput(outcome.summary())


APPLY_PATCH = "apply_patch"
"""The tool's name (its one spelling: others import it)."""


def patch_paths(arguments: Mapping[str, Any]) -> list[str]:
    """The files a patch adds, deletes, updates or moves to, read with the parser that applies
    it (a patch it cannot parse changes nothing, and names no file)."""
    text = arguments.get("patch")
    if not isinstance(text, str):
        return []
    try:
        hunks = parse_patch(text).hunks
    except PatchError:
        return []
    paths: list[str] = []
    for hunk in hunks:
        if isinstance(hunk, AddFile | DeleteFile):
            paths.append(hunk.path)
        elif isinstance(hunk, UpdateFile):
            paths += [hunk.path] + ([hunk.move_path] if hunk.move_path else [])
    return paths


APPLY_PATCH_EFFECTS = ToolEffects(frozenset({Effect.READ, Effect.WRITE}), patch_paths)
"""A patch reads and writes exactly the files its headers name."""


def apply_patch_tool() -> RegisteredTool:
    """The ``apply_patch`` tool with a ``patch`` argument (codex's freeform tool as JSON)."""
    patch = {"type": "string", "description": "The entire patch, from *** Begin Patch to *** End Patch."}
    return make_tool(APPLY_PATCH, APPLY_PATCH_DESCRIPTION, {"patch": patch}, ["patch"], _run_apply_patch,
                     APPLY_PATCH_EFFECTS)
