"""EDIT_FILE's line replacement (relay spec "EDIT_FILE"), as a pure function on text.

Beyond the spec (faults of the original agent we do not repeat):

- The file keeps its line endings: replacement lines get the file's dominant terminator
  (``\\r\\n`` or ``\\n``) whatever the inbox used; untouched lines are not rewritten.
- The file keeps its final newline, or its lack of one.
- A range past the end is rejected with the file's line count, never clipped.
- A UTF-8 byte-order mark at the start survives an edit of line 1.
"""

from __future__ import annotations

_BOM = "\ufeff"


class LineRangeError(ValueError):
    """The requested range does not fit the file; the message says why and what fits."""


def split_lines(text: str) -> list[str]:
    """Lines with their terminators; only ``\\n`` ends a line (``\\r\\n`` included)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _without_terminator(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith("\n"):
        return line[:-1]
    return line


def dominant_line_ending(lines: list[str]) -> str:
    """``\\r\\n`` when most terminated lines use it, else ``\\n``."""
    crlf = sum(1 for line in lines if line.endswith("\r\n"))
    lf = sum(1 for line in lines if line.endswith("\n")) - crlf
    return "\r\n" if crlf > lf else "\n"


def replace_lines(original: str, start_line: int, end_line: int, replacement: str) -> str:
    """Replace lines ``start_line..end_line`` (1-based, inclusive) of ``original``.

    ``replacement`` is split into lines the same way; an empty replacement deletes the
    range. Raises :class:`LineRangeError` unless ``1 <= start_line <= end_line <= lines``.
    """
    bom = original.startswith(_BOM)
    lines = split_lines(original[1:] if bom else original)
    count = len(lines)
    if count == 0:
        raise LineRangeError("the file is empty, so it has no lines to replace; write it with CREATE_FILE")
    if start_line < 1:
        raise LineRangeError(f"start_line must be 1 or more, got {start_line}")
    if end_line < start_line:
        raise LineRangeError(f"end_line {end_line} is before start_line {start_line}")
    if end_line > count:
        raise LineRangeError(
            f"end_line {end_line} is past the end of the file, which has {count} line"
            f"{'s' if count != 1 else ''}; read the file again and use a range within 1-{count}"
        )
    ending = dominant_line_ending(lines)
    new_lines = [_without_terminator(line) + ending for line in split_lines(replacement)]
    result = lines[: start_line - 1] + new_lines + lines[end_line:]
    if result and not lines[-1].endswith("\n"):
        result[-1] = _without_terminator(result[-1])
    return (_BOM if bom else "") + "".join(result)
