"""FILE blocks applied to file texts (issue 33): whole files, SEARCH/REPLACE found exactly
once, and an error naming the file and the fix otherwise."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from codeloop.agent.small_model.hunks import HunkError, apply_block, apply_reply, changed_only
from codeloop.agent.small_model.reply_format import FileBlock, FilesReply, Hunk, parse_reply

STATS = "def last_n(xs, n):\n    return xs[-n - 1:]\n\n\nprint(last_n([1, 2, 3], 2))"


def test_a_hunk_replaces_its_search_text_and_keeps_a_missing_final_newline_missing() -> None:
    reply = parse_reply("FILE stats.py\n<<<<<<< SEARCH\n    return xs[-n - 1:]\n=======\n    return xs[-n:]\n"
                        ">>>>>>> REPLACE\n<<<<<<< SEARCH\nprint(last_n([1, 2, 3], 2))\n=======\n>>>>>>> REPLACE\n")
    assert isinstance(reply, FilesReply)
    assert apply_reply(reply, {"stats.py": STATS}.get) == {"stats.py": "def last_n(xs, n):\n    return xs[-n:]\n\n"}
    last = parse_reply("FILE stats.py\n<<<<<<< SEARCH\nprint(last_n([1, 2, 3], 2))\n=======\nprint(1)\n>>>>>>> REPLACE")
    assert isinstance(last, FilesReply)
    assert apply_reply(last, {"stats.py": STATS}.get)["stats.py"].endswith("\nprint(1)")


def test_later_blocks_see_earlier_ones_and_whole_files_create() -> None:
    reply = FilesReply((FileBlock("a.py", "x = 1\n"), FileBlock("a.py", None, (Hunk("x = 1\n", "x = 2\n"),)),
                        FileBlock("b.py", "")))
    assert apply_reply(reply, lambda _path: None) == {"a.py": "x = 2\n", "b.py": ""}
    assert changed_only({"a.py": "same\n", "b.py": "new\n"}, {"a.py": "same\n"}.get) == {"b.py": "new\n"}


def test_a_delete_line_removes_its_file_and_a_later_block_may_write_it_again() -> None:
    files = {"old.txt": "x\n", "keep.txt": "k\n"}.get
    gone = parse_reply("DELETE old.txt\n")
    assert isinstance(gone, FilesReply) and apply_reply(gone, files) == {"old.txt": None}
    again = FilesReply((FileBlock("old.txt", None, deleted=True), FileBlock("old.txt", "y\n")))
    assert apply_reply(again, files) == {"old.txt": "y\n"}
    assert changed_only({"old.txt": None, "missing.txt": None}, files) == {"old.txt": None}


@pytest.mark.parametrize(("current", "block", "message"), [
    (None, FileBlock("new.py", None, (Hunk("x\n", "y\n"),)),
     "new.py does not exist, so SEARCH/REPLACE cannot change it: write it whole"),
    ("a = 1\n", FileBlock("a.py", None, (Hunk("  a = 1\n", "a = 2\n"),)),
     "the SEARCH text of the hunk of a.py is not in the file: copy the lines exactly"),
    ("a\nb\na\n", FileBlock("a.py", None, (Hunk("b\n", "c\n"), Hunk("a\n", "z\n"))),
     "the SEARCH text of hunk 2 of a.py is in the file 2 times: add the lines around it"),
])
def test_a_hunk_that_cannot_apply_names_the_file_the_hunk_and_the_fix(current: str | None, block: FileBlock,
                                                                       message: str) -> None:
    with pytest.raises(HunkError, match=message) as caught:
        apply_block(current, block)
    assert caught.value.path == block.path


LINES = st.lists(st.sampled_from(["a", "b", "  a", "", "x = 1", "é", "\r"]), max_size=8)


@settings(max_examples=400, deadline=None)
@given(LINES, LINES, LINES, LINES, st.booleans())
def test_a_search_text_found_once_is_replaced_there_and_nowhere_else(
        before: list[str], middle: list[str], after: list[str], new: list[str], final_newline: bool) -> None:
    lines = [*before, *middle, "UNIQUE", *after]
    assume(final_newline or lines[-1] != "")  # else the text ends with a newline after all
    text = "\n".join(lines) + ("\n" if final_newline else "")
    search = "".join(f"{line}\n" for line in [*middle, "UNIQUE"])
    block = FileBlock("f", None, (Hunk(search, "".join(f"{line}\n" for line in new)),))
    if (text if final_newline else text + "\n").count(search) != 1:
        with pytest.raises(HunkError):
            apply_block(text, block)
        return
    full = "".join(f"{line}\n" for line in before + new + after)
    assert apply_block(text, block) == (full if final_newline else full[:-1])
