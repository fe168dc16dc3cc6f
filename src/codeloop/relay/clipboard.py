"""Copying an outbox to the system clipboard, when a clipboard tool exists.

Tools tried in order: ``wl-copy`` (Wayland), ``xclip`` and ``xsel`` (X11), ``pbcopy``
(macOS), ``clip.exe`` (WSL), ``termux-clipboard-set``. The tool runs through the one
process runner; its output is sent to ``/dev/null`` so that X11 tools, which stay in the
background to serve the selection, hold no pipe and are not killed as lingering.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from codeloop.environments.base import ExecLimits
from codeloop.environments.runner import run_process

CLIPBOARD_TIMEOUT_MS = 5_000

_TOOLS: tuple[tuple[str, tuple[str, ...], str | None], ...] = (
    ("wl-copy", (), "WAYLAND_DISPLAY"),
    ("xclip", ("-selection", "clipboard", "-in"), "DISPLAY"),
    ("xsel", ("--clipboard", "--input"), "DISPLAY"),
    ("pbcopy", (), None),
    ("clip.exe", (), None),
    ("termux-clipboard-set", (), None),
)


def find_clipboard_tool(environ: Mapping[str, str] | None = None) -> list[str] | None:
    """The argv of the first usable clipboard tool, or None."""
    environ = os.environ if environ is None else environ
    for name, args, needs in _TOOLS:
        if needs is not None and not environ.get(needs):
            continue
        found = shutil.which(name, path=environ.get("PATH"))
        if found:
            return [found, *args]
    return None


async def copy_file_to_clipboard(path: Path, environ: Mapping[str, str] | None = None) -> str | None:
    """Copy the file's text to the clipboard; return the tool's name, or None when no tool
    exists or it failed (copying is a convenience: failure is never an error)."""
    environ = dict(os.environ if environ is None else environ)
    tool = find_clipboard_tool(environ)
    if tool is None:
        return None
    environ["CODELOOP_CLIPBOARD_FILE"] = str(path)
    argv = ["/bin/sh", "-c", 'exec "$@" < "$CODELOOP_CLIPBOARD_FILE" > /dev/null 2>&1', "sh", *tool]
    result = await run_process(
        argv, cwd=path.parent, env=environ, timeout_ms=CLIPBOARD_TIMEOUT_MS, limits=ExecLimits()
    )
    return Path(tool[0]).name if result.exit_code == 0 and not result.timed_out else None
