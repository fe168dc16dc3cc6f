"""Byte-preserving text helpers: how an edit's new text is computed (issue 19).

An edit must change only what it means to change: a file keeps its byte-order mark, each
line keeps its own ending (LF or CRLF), and the final-newline state stays as it was. These
helpers split text into lines that *keep* their endings, so callers splice whole lines and
never rebuild the ones they did not touch. New lines take the file's dominant ending.
Every editing path uses them: apply_patch, edit_file, and the file operations of
``workspace_ops`` that the relay, spaces and the write_file tool go through.
"""

from __future__ import annotations

import difflib
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


def replacement_text(matched: str, old: str, new: str, ending: str) -> str:
    """What replaces ``matched`` (the file's text where ``old`` matched, with the same line
    breaks): ``new``, with its line breaks written as ``ending``, except that the lines it
    shares with ``old`` keep ``matched``'s bytes."""
    new_lines = split_keeping_ends(new)
    fresh = [with_ending(line, ending) for line in new_lines]
    return "".join(keep_common_lines(split_keeping_ends(matched), split_keeping_ends(old), new_lines, fresh))


def keep_common_lines(matched: list[str], old: list[str], new: list[str], fresh: list[str]) -> list[str]:
    """The lines replacing ``matched`` (``matched[i]`` is the file's line where ``old[i]``
    matched): a line of ``new`` whose text ``old`` also has is the file's line; any other is
    ``fresh[j]``, the new line as written to the file. A kept line keeps its own ending,
    unless the new line has none (the end of the replaced text) or it had none itself.)"""
    out: list[str] = []
    opcodes = difflib.SequenceMatcher(None, [strip_ending(x) for x in old], [strip_ending(x) for x in new], autojunk=False)
    for tag, i1, i2, j1, j2 in opcodes.get_opcodes():
        if tag != "equal":
            out += fresh[j1:j2]
            continue
        for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
            text = strip_ending(matched[i])
            own, wanted = matched[i][len(text) :], fresh[j][len(strip_ending(fresh[j])) :]
            out.append(text + (own if own and wanted else wanted))
    return out


def rewritten_text(existing: str, new: str) -> str:
    """What a whole-file rewrite of a file holding ``existing`` writes for ``new``.

    A model (or client) sends LF text; a file that was CRLF stays CRLF (``new``'s bare line
    breaks are written as CRLF, unless ``new`` has a CRLF itself: then its endings are
    deliberate and kept), and a file that had a BOM keeps it. The final-newline state is
    ``new``'s: the content states where the file ends."""
    bom, body = split_bom(existing)
    if text_dominant_ending(body) == "\r\n" and "\r\n" not in new:
        new = with_ending(new, "\r\n")
    return new if new.startswith(BOM) else bom + new
