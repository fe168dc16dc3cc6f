"""Errors a tool raises for the model to read.

::

    ToolError            the call failed in a way the model can fix (old_string not found, ...)
    └── PatchError       apply_patch could not parse or apply the patch (codex's messages)

Workspace failures (missing file, path outside the root, ...) arrive as
:class:`codeloop.environments.errors.WorkspaceError`; the pipeline turns both trees into
error results with the exception's message, unchanged.
"""

from __future__ import annotations


class ToolError(Exception):
    """Raised by an executor when the call failed; the message is shown to the model."""


class PatchError(ToolError):
    """Raised when a v4a patch is malformed or does not apply."""
