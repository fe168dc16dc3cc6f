"""Rendering an outbox file (relay spec "Outbox Format").

:func:`render_outbox` is pure: the engine gathers the workspace listing and the requested
file contents through the execution environment and passes them in, so the exact text
is testable without a workspace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from codeloop.relay.limits import notice
from codeloop.relay.outbox_texts import CONTINUATION_PROMPT, PROTOCOL_TEXT
from codeloop.relay.results import CommandResult, format_result
from codeloop.relay.session import SessionState


@dataclass(frozen=True)
class WorkspaceListing:
    """The ``## Workspace Files`` section's data."""

    files: Sequence[tuple[str, int]]
    """``(workspace-relative path, size in bytes)``, in the order shown."""
    omitted: int = 0
    """Files left out because of the listing limit."""
    hidden_dirs: Sequence[str] = ()
    """Directories not walked (``.git``), named so the model knows they exist."""


@dataclass(frozen=True)
class RequestedFile:
    """One block of ``## Requested File Contents``."""

    path: str
    """The path as the model wrote it."""
    content: str | None
    """The text, or None when it cannot be shown (then ``note`` says why)."""
    note: str | None = None
    """A line shown instead of, or after, the content: missing, binary, truncated."""


def _indent_task(task: str) -> str:
    lines = task.strip("\n").split("\n")
    return "\n".join([lines[0], *("  " + line for line in lines[1:])])


def render_listing(listing: WorkspaceListing) -> str:
    """The ``## Workspace Files`` section, ``(empty workspace)`` when there is nothing."""
    lines = ["## Workspace Files"]
    if not listing.files and not listing.omitted:
        lines.append("(empty workspace)")
    lines.extend(f"  {path} ({size} bytes)" for path, size in listing.files)
    if listing.omitted:
        lines.append(
            f"  ... and {listing.omitted} more files, not listed to keep this message short "
            "(use RUN_COMMAND with find or ls to see them)"
        )
    if listing.hidden_dirs:
        lines.append("  (not listed: " + ", ".join(f"{d}/" for d in listing.hidden_dirs) + ")")
    return "\n".join(lines)


def render_results(results: Sequence[CommandResult]) -> str:
    """The ``## Previous Command Results`` section."""
    body = [format_result(r) for r in results] or ["(your previous reply contained no commands)"]
    return "\n".join(["## Previous Command Results", *body])


def render_requested(files: Sequence[RequestedFile]) -> str:
    """The ``## Requested File Contents`` section."""
    parts = ["## Requested File Contents"]
    for f in files:
        parts.append(f"--- {f.path} ---")
        if f.content is not None:
            parts.append(f.content[:-1] if f.content.endswith("\n") else f.content)
        if f.note is not None:
            parts.append(f.note)
        parts.append(f"--- end {f.path} ---")
    return "\n".join(parts)


def render_outbox(state: SessionState, listing: WorkspaceListing, requested: Sequence[RequestedFile]) -> str:
    """The full outbox text for ``state.sequence_number``.

    Sections in the spec's order; ``## Previous Command Results`` from sequence 2 on,
    ``## Requested File Contents`` only when files were requested; the PROMPT section is the
    task for sequence 1 and the continuation prompt afterwards, or, once a limit of the
    session is reached, a notice saying so (:func:`codeloop.relay.limits.notice`).
    """
    context = [render_listing(listing)]
    if state.sequence_number > 1:
        context.append(render_results(state.last_results))
    if requested:
        context.append(render_requested(requested))
    prompt = state.task.strip("\n") if state.sequence_number == 1 else notice(state) or CONTINUATION_PROMPT
    return (
        "=== HEADER ===\n"
        f"Session: {state.session_id}\n"
        f"Sequence: {state.sequence_number}\n"
        f"Task: {_indent_task(state.task)}\n"
        "\n=== PROTOCOL ===\n"
        f"{PROTOCOL_TEXT}"
        "\n=== CONTEXT ===\n" + "\n\n".join(context) + "\n"
        "\n=== PROMPT ===\n"
        f"{prompt}\n"
    )
