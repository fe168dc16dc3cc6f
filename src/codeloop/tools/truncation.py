"""Tool output truncation, exactly as loop spec §5.1–5.3.

Character truncation always runs first (it bounds size even for a 10 MB single line),
then line truncation as a readability pass. Markers are the spec's texts verbatim.
The caller keeps the untruncated text (``ToolCallOutcome.full_output``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from codeloop.tools.apply_patch import APPLY_PATCH
from codeloop.tools.edit import EDIT_FILE
from codeloop.tools.files import LIST_DIR, READ_FILE, READ_MANY_FILES, WRITE_FILE
from codeloop.tools.search import GLOB, GREP
from codeloop.tools.shell import SHELL

TruncationMode = Literal["head_tail", "tail", "head_tail_counted"]
"""``head_tail`` and ``tail`` carry the loop spec's warnings (§5.1); ``head_tail_counted``
keeps head and tail around a one-line ``[... N characters of output omitted ...]`` marker
and never exceeds the limit (the relay's RUN_COMMAND cut, relay spec "RUN_COMMAND")."""

_DEFAULTS: Mapping[str, tuple[int, TruncationMode, int | None]] = {
    # tool: (character limit, mode, line limit or None)
    READ_FILE: (50_000, "head_tail", None),
    SHELL: (30_000, "head_tail", 256),
    GREP: (20_000, "tail", 200),
    GLOB: (20_000, "tail", 500),
    EDIT_FILE: (10_000, "tail", None),
    APPLY_PATCH: (10_000, "tail", None),
    WRITE_FILE: (1_000, "tail", None),
    "spawn_agent": (20_000, "head_tail", None),
    # Not in the §5.2 table: sized like their nearest relatives.
    READ_MANY_FILES: (50_000, "head_tail", None),
    LIST_DIR: (20_000, "head_tail", 500),
}
DEFAULT_TOOL_LIMITS: Mapping[str, int] = {name: chars for name, (chars, _, _) in _DEFAULTS.items()}
"""Default character limits (spec §5.2, plus the gemini-profile tools)."""
DEFAULT_TRUNCATION_MODES: Mapping[str, TruncationMode] = {name: d[1] for name, d in _DEFAULTS.items()}
"""Truncation mode per tool (spec §5.2)."""
DEFAULT_LINE_LIMITS: Mapping[str, int | None] = {name: lines for name, (_, _, lines) in _DEFAULTS.items()}
"""Default line limits, applied after character truncation (spec §5.3)."""

FALLBACK_CHAR_LIMIT = 30_000
"""Character limit for tools missing from the table (custom tools)."""
FALLBACK_MODE: TruncationMode = "head_tail"
"""Mode for tools missing from the table."""


@dataclass(frozen=True)
class TruncationConfig:
    """Overrides of the default limits (``SessionConfig.tool_output_limits`` and
    ``tool_line_limits``, spec §5.2/§5.3). Missing names fall back to the defaults."""

    tool_output_limits: Mapping[str, int] = field(default_factory=dict)
    """Character limit per tool name."""
    tool_line_limits: Mapping[str, int | None] = field(default_factory=dict)
    """Line limit per tool name; ``None`` disables line truncation for that tool."""
    tool_truncation_modes: Mapping[str, TruncationMode] = field(default_factory=dict)
    """Truncation mode per tool name (a face whose spec fixes its own cut sets it here)."""


def truncate_output(output: str, max_chars: int, mode: TruncationMode) -> str:
    """Character truncation (spec §5.1): keep head and tail, or only the tail."""
    if mode == "head_tail_counted":
        return _cut_counted(output, max_chars)
    if len(output) <= max_chars:
        return output
    removed = len(output) - max_chars
    if mode == "head_tail":
        half = max_chars // 2
        tail = output[-half:] if half > 0 else ""
        return (
            output[:half]
            + "\n\n[WARNING: Tool output was truncated. "
            + f"{removed} characters were removed from the middle. "
            + "The full output is available in the event stream. "
            + "If you need to see specific parts, re-run the tool with more targeted parameters.]\n\n"
            + tail
        )
    if mode == "tail":
        tail = output[-max_chars:] if max_chars > 0 else ""
        return (
            "[WARNING: Tool output was truncated. First "
            + f"{removed} characters were removed. "
            + "The full output is available in the event stream.]\n\n"
            + tail
        )
    raise ValueError(f"unknown truncation mode {mode!r}; expected 'head_tail', 'tail' or 'head_tail_counted'")


def _cut_counted(output: str, limit: int) -> str:
    """At most ``limit`` characters: head and tail around a marker that says how many
    characters were left out (the end of a log holds the error, the start its context);
    ``limit <= 0`` keeps everything."""
    if limit <= 0 or len(output) <= limit:
        return output

    def marker(omitted: int) -> str:
        return f"\n[... {omitted} characters of output omitted ...]\n"

    # Sized with the largest possible count so the result never exceeds the limit.
    keep = max(limit - len(marker(len(output))), 0)
    head = keep // 2
    tail = keep - head
    return output[:head] + marker(len(output) - keep) + (output[-tail:] if tail else "")


def truncate_lines(output: str, max_lines: int) -> str:
    """Line truncation with a head/tail split (spec §5.3)."""
    lines = output.split("\n")
    if len(lines) <= max_lines:
        return output
    head_count = max_lines // 2
    tail_count = max_lines - head_count
    omitted = len(lines) - head_count - tail_count
    tail = lines[-tail_count:] if tail_count > 0 else []
    return "\n".join(lines[:head_count]) + f"\n[... {omitted} lines omitted ...]\n" + "\n".join(tail)


_NO_OVERRIDES = TruncationConfig()


def truncate_tool_output(output: str, tool_name: str, config: TruncationConfig | None = None) -> str:
    """Characters first, then lines (spec §5.3), with ``config``'s limits and mode for
    ``tool_name`` where it has them, else the defaults."""
    config = config or _NO_OVERRIDES
    limit = config.tool_output_limits.get(tool_name, DEFAULT_TOOL_LIMITS.get(tool_name, FALLBACK_CHAR_LIMIT))
    mode = config.tool_truncation_modes.get(tool_name, DEFAULT_TRUNCATION_MODES.get(tool_name, FALLBACK_MODE))
    result = truncate_output(output, limit, mode)
    max_lines = config.tool_line_limits.get(tool_name, DEFAULT_LINE_LIMITS.get(tool_name))
    return result if max_lines is None else truncate_lines(result, max_lines)
