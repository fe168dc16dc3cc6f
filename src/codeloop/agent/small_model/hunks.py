"""A reply's FILE blocks applied to file texts (issue 33), in memory: what a candidate would
make of the workspace, before any of it is written anywhere.

A whole file replaces the text; each SEARCH/REPLACE hunk must find its SEARCH text exactly
once in the text as the earlier hunks and blocks left it. A text without a final newline is
matched as if it had one (a SEARCH text always ends with one), and keeps its ending. A hunk
that cannot apply makes the whole candidate unusable: :class:`HunkError` says which block,
which hunk and why, in words the model can act on (the one repair round shows it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from codeloop.agent.small_model.reply_format import FileBlock, FilesReply


class HunkError(ValueError):
    """A FILE block that cannot be applied; ``path`` names its file."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def apply_block(current: str | None, block: FileBlock) -> str | None:
    """The text of ``block.path`` after ``block``, given its ``current`` text (None: the file
    does not exist; returned for a DELETE line); HunkError when a hunk's SEARCH text is missing
    or not unique."""
    if block.deleted:
        return None  # a file already gone stays gone: no change (the model repeats applied replies)
    if block.content is not None:
        return block.content
    if current is None:
        raise HunkError(block.path, f"{block.path} does not exist, so SEARCH/REPLACE cannot change it: "
                                    f"write it whole (FILE {block.path}, then the file between fences)")
    # Matched as if the file ended with a newline, as every SEARCH text does.
    open_end = not current.endswith("\n") and current != ""
    text = current + "\n" if open_end else current
    for number, hunk in enumerate(block.hunks, 1):
        found = text.count(hunk.search)
        which = f"hunk {number} of {block.path}" if len(block.hunks) > 1 else f"the hunk of {block.path}"
        if found == 0:
            raise HunkError(block.path, f"the SEARCH text of {which} is not in the file: copy the lines "
                                        "exactly as the file has them, indentation included")
        if found > 1:
            raise HunkError(block.path, f"the SEARCH text of {which} is in the file {found} times: add the "
                                        "lines around it so it is found once")
        text = text.replace(hunk.search, hunk.replace, 1)
    return text[:-1] if open_end and text.endswith("\n") else text


def apply_reply(reply: FilesReply, read: Callable[[str], str | None]) -> dict[str, str | None]:
    """The new text of each path ``reply`` names (None: deleted), in the order first named; ``read(path)``
    gives a file's current text (None when it does not exist). A later block of a path
    applies to what the earlier ones made. HunkError on the first block that cannot apply."""
    changed: dict[str, str | None] = {}
    for block in reply.files:
        current = changed[block.path] if block.path in changed else read(block.path)
        changed[block.path] = apply_block(current, block)
    return changed


def changed_only(new: Mapping[str, str | None], read: Callable[[str], str | None]) -> dict[str, str | None]:
    """``new`` without the paths whose text it leaves as it was (a candidate that rewrites a
    file unchanged changes nothing there)."""
    return {path: text for path, text in new.items() if read(path) != text}
