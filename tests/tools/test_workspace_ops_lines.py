"""Line-range replacement (the relay's EDIT_FILE): the spec's semantics and the original agent's faults we fix."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.tools.text_endings import split_keeping_ends
from codeloop.tools.workspace_ops import OperationError, replace_lines


def test_replaces_inclusive_one_based_range() -> None:
    assert replace_lines("a\nb\nc\nd\n", 2, 3, "X\n") == "a\nX\nd\n"


def test_replacement_may_have_more_lines() -> None:
    assert replace_lines("a\nb\nc\n", 2, 2, "X\nY\nZ\n") == "a\nX\nY\nZ\nc\n"


def test_empty_replacement_deletes_the_range() -> None:
    assert replace_lines("a\nb\nc\n", 1, 2, "") == "c\n"


def test_crlf_file_keeps_crlf_even_when_reply_used_lf() -> None:
    assert replace_lines("a\r\nb\r\nc\r\n", 2, 2, "X\nY\n") == "a\r\nX\r\nY\r\nc\r\n"


def test_lf_file_keeps_lf_even_when_reply_used_crlf() -> None:
    assert replace_lines("a\nb\n", 1, 1, "X\r\n") == "X\nb\n"


def test_missing_final_newline_stays_missing_when_last_line_replaced() -> None:
    assert replace_lines("a\nb", 2, 2, "X\nY\n") == "a\nX\nY"


def test_missing_final_newline_stays_missing_when_last_lines_deleted() -> None:
    assert replace_lines("a\nb\nc", 2, 3, "") == "a"


def test_final_newline_stays_when_present() -> None:
    assert replace_lines("a\nb\n", 2, 2, "X") == "a\nX\n"


def test_end_line_past_the_end_is_rejected_not_clipped() -> None:
    with pytest.raises(OperationError, match="past the end of the file, which has 3 lines"):
        replace_lines("a\nb\nc\n", 2, 4, "X\n")


@pytest.mark.parametrize(("start", "end"), [(0, 1), (3, 2)])
def test_invalid_ranges_are_rejected(start: int, end: int) -> None:
    with pytest.raises(OperationError):
        replace_lines("a\nb\nc\n", start, end, "X\n")


def test_empty_file_cannot_be_edited() -> None:
    with pytest.raises(OperationError, match="the file is empty"):
        replace_lines("", 1, 1, "X\n")


def test_byte_order_mark_survives_editing_line_one() -> None:
    assert replace_lines("\ufeffa\nb\n", 1, 1, "X\n") == "\ufeffX\nb\n"


_lines = st.lists(st.text(st.characters(blacklist_characters="\r\n"), max_size=5), min_size=1, max_size=8)


@given(_lines, st.booleans(), st.booleans(), st.data())
def test_untouched_lines_endings_and_final_newline_are_kept(
    lines: list[str], crlf: bool, final_newline: bool, data: st.DataObject
) -> None:
    eol = "\r\n" if crlf else "\n"
    # A last line "" without a newline does not exist ("a\n" + "" ends with a newline), and
    # a file needs two lines to show its line ending when it has no final newline.
    lines = [*lines, "z"] if len(lines) < 2 or lines[-1] == "" else lines
    original = eol.join(lines) + (eol if final_newline else "")
    start = data.draw(st.integers(1, len(lines)))
    end = data.draw(st.integers(start, len(lines)))
    drawn = data.draw(_lines)
    repl = [*drawn[:-1], drawn[-1] or "q"]
    result = replace_lines(original, start, end, "\n".join(repl) + "\n")
    expected_lines = lines[: start - 1] + repl + lines[end:]
    assert result == eol.join(expected_lines) + (eol if final_newline else "")
    assert len(split_keeping_ends(result)) == len(expected_lines)
