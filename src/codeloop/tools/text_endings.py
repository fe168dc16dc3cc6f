"""Byte-preserving text helpers shared by apply_patch and edit_file (issue 19).

An edit must change only what it means to change: a file keeps its byte-order mark, each
line keeps its own ending (LF or CRLF), and the final-newline state stays as it was. These
helpers split text into lines that *keep* their endings, so callers splice whole lines and
never rebuild the ones they did not touch. New lines take the file's dominant ending.
"""

from __future__ import annotations

from collections.abc import Sequence

BOM = "\ufeff"
"""The UTF-8 byte-order mark, as a decoded character."""


def split_bom(text: str) -> tuple[str, str]:
    """``(bom, rest)``: the byte-order mark (or ``""``) and the text after it."""
    return (BOM, text[1:]) if text.startswith(BOM) else ("", text)


def split_keeping_ends(text: str) -> list[str]:
    """Lines of ``text`` split at ``\\n`` only, each with its ending (the last may have none)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def strip_ending(line: str) -> str:
    """The line without its ``\\n`` or ``\\r\\n``."""
    if line.endswith("\n"):
        return line[:-2] if line.endswith("\r\n") else line[:-1]
    return line


def dominant_ending(lines: Sequence[str]) -> str:
    """``"\\r\\n"`` when more lines end with CRLF than with a bare LF, else ``"\\n"``."""
    crlf = sum(1 for line in lines if line.endswith("\r\n"))
    lf = sum(1 for line in lines if line.endswith("\n")) - crlf
    return "\r\n" if crlf > lf else "\n"


def text_dominant_ending(text: str) -> str:
    """:func:`dominant_ending` of a whole text, without splitting it."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf > text.count("\n") - crlf else "\n"


def with_ending(text: str, ending: str) -> str:
    """``text`` with every bare ``\\n`` written as ``ending`` (CRLF stays CRLF)."""
    if ending == "\n":
        return text
    return text.replace("\r\n", "\n").replace("\n", ending)


def settle_line_ends(lines: list[str], ending: str, final_newline: bool) -> list[str]:
    """Give every line but the last an ending (``ending`` where it had none: a line that was
    last and is not any more), and make the last line end as ``final_newline`` says."""
    for index in range(len(lines) - 1):
        if not lines[index].endswith("\n"):
            lines[index] += ending
    if lines:
        last = lines[-1]
        if final_newline and not last.endswith("\n"):
            lines[-1] = last + ending
        elif not final_newline:
            lines[-1] = strip_ending(last)
    return lines
