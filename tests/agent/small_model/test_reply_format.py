"""The reply format of the small-model strategy (issue 33): the GBNF grammar and the strict
parser say the same language. Texts are derived from the grammar's own text (``gbnf.py``
reads it), so a rule changed in one and not in the other fails here."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from codeloop.agent.small_model.reply_format import (
    GRAMMAR,
    DoneReply,
    FileBlock,
    FilesReply,
    Hunk,
    ReplyFormatError,
    RunReply,
    parse_reply,
    render_reply,
    repeated_block,
)

from .gbnf import derive, read_grammar, to_regex

RULES = read_grammar(GRAMMAR)
LANGUAGE = re.compile(to_regex(RULES))
"""The grammar as a Python regular expression: the language's recogniser."""

PIECES = ["FILE ", "FILE a.py\n", "DELETE ", "DELETE a.py", "DELETE a.py\n", "RUN ", "DONE", "\n", "\n\n", "```", "```python", "``", "`",
          "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", ">>>>>>> REPLAC", "a.py", "x = 1", " ", "\t", "\r",
          "/", "=", ">", "é", "\x0b"]
"""The format's delimiters cut and joined in every order: what malformed replies are made of."""


def accepted(text: str) -> bool:
    return LANGUAGE.fullmatch(text) is not None


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_every_text_the_grammar_derives_parses(data: st.DataObject) -> None:
    text = derive(RULES, data)
    assert accepted(text)
    reply = parse_reply(text)
    # What was parsed says the same again: rendering it and parsing that gives it back.
    assert parse_reply(render_reply(reply)) == reply


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join))
@example("FILE a.py\n```\n```")
@example("FILE a.py\n<<<<<<< SEARCH\n\n=======\n>>>>>>> REPLACE")
@example("FILE a.py\n<<<<<<< SEARCH\n>>>>>>> REPLACE\n=======\n=======x\n>>>>>>> REPLACE\n\n")
@example("RUN ls\n\n")
@example("DONE\n\nanything ``` at all\n")
@example("FILE a.py\n```py thon\nx\n```\n")
@example("FILE a.py\n```\n```python\n```")
@example("FILE a.py\n<<<<<<< SEARCH\n=======x\n=======\n>>>>>>> REPLACEMENT\n>>>>>>> REPLACE")
def test_the_parser_accepts_exactly_what_the_grammar_accepts(text: str) -> None:
    try:
        parse_reply(text)
    except ReplyFormatError as exc:
        assert not accepted(text), f"the grammar accepts what the parser refused: {exc}"
        assert 1 <= exc.line <= text.count("\n") + 1
    else:
        assert accepted(text), "the parser accepted what the grammar refuses"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_derived_reply_cut_short_is_refused_or_still_in_the_grammar(data: st.DataObject) -> None:
    """A reply cut off at max_tokens: either still a whole reply, or a precise error."""
    text = derive(RULES, data)
    cut = text[: data.draw(st.integers(0, len(text)))]
    try:
        parse_reply(cut)
    except ReplyFormatError:
        assert not accepted(cut)
    else:
        assert accepted(cut)


def test_whole_files_hunks_run_and_done() -> None:
    text = ("FILE app/config.py\n```python\nMAX_RETRIES = 5\n```\n\n"
            "FILE stats.py\n<<<<<<< SEARCH\n    return xs[-n - 1:]\n=======\n    return xs[-n:]\n>>>>>>> REPLACE\n"
            "<<<<<<< SEARCH\nimport os\n=======\n>>>>>>> REPLACE\n")
    assert parse_reply(text) == FilesReply((
        FileBlock("app/config.py", "MAX_RETRIES = 5\n"),
        FileBlock("stats.py", None, (Hunk("    return xs[-n - 1:]\n", "    return xs[-n:]\n"), Hunk("import os\n", ""))),
    ))
    assert parse_reply("FILE empty.txt\n```\n```") == FilesReply((FileBlock("empty.txt", ""),))
    assert parse_reply("RUN python3 -m unittest test_durations\n") == RunReply("python3 -m unittest test_durations")
    assert parse_reply("DONE") == DoneReply("")
    assert parse_reply("DONE\nThe port is 8080.") == DoneReply("The port is 8080.")
    # A whole file may quote fences that are not exactly three backticks alone on a line.
    quoted = "FILE README.md\n```markdown\n# Use\n```bash\nrun\n````\n```\n"
    assert parse_reply(quoted) == FilesReply((FileBlock("README.md", "# Use\n```bash\nrun\n````\n"),))
    # DELETE lines stand among the blocks, in order.
    mixed = "DELETE old/notes.txt\nFILE new.txt\n```\nx\n```\nDELETE b.txt\n"
    assert parse_reply(mixed) == FilesReply((FileBlock("old/notes.txt", None, deleted=True),
                                             FileBlock("new.txt", "x\n"), FileBlock("b.txt", None, deleted=True)))
    assert all(map(accepted, [mixed, text, quoted, "DONE\nThe port is 8080.", "FILE empty.txt\n```\n```"]))


@pytest.mark.parametrize(("text", "message"), [
    ("", "line 1: a reply starts with FILE <path>, DELETE <path>, RUN <command> or DONE, got an empty reply"),
    ("Sure! Here is the file:\nFILE a.py", "line 1: a reply starts with FILE <path>, DELETE <path>, RUN <command> or DONE, "
                                           "not 'Sure! Here is the file:'"),
    ("\nDONE", "line 1: a reply starts with FILE"),
    ("DONE.", "line 1: a reply starts with FILE <path>, DELETE <path>, RUN <command> or DONE, not 'DONE.'"),
    ("FILE /etc/passwd\n```\nx\n```", "line 1: FILE needs one relative path without spaces, tabs or backticks"),
    ("FILE my file.py\n```\nx\n```", "line 1: FILE needs one relative path"),
    ("FILE a.py", "line 1: the FILE line of a.py ends the reply: a fenced whole file or a <<<<<<< SEARCH hunk "
                  "must follow it"),
    ("FILE a.py\nprint(1)\n", "line 2: after FILE a.py comes a fence ``` (the whole file) or a line "
                              "<<<<<<< SEARCH, not 'print(1)'"),
    ("FILE a.py\n```python\nprint(1)\n", "line 4: the whole file a.py opened at line 2 has no line '```' closing it"),
    ("FILE a.py\n<<<<<<< SEARCH\nx = 1\n", "line 4: the SEARCH text of a.py opened at line 2 has no line "
                                           "'=======' closing it"),
    ("FILE a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n", "line 6: the hunk of a.py opened at line 2 has no line "
                                                           "'>>>>>>> REPLACE' closing it"),
    ("FILE a.py\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE", "line 3: the SEARCH text of a.py is empty"),
    ("FILE a.py\n```\nx\n```\nDone, I changed a.py.", "line 5: after a FILE block comes another FILE block, "
                                                      "a DELETE line or the end of the reply, not 'Done, I changed a.py.'"),
    ("DELETE /etc/passwd", "line 1: DELETE needs one relative path"),
    ("DELETE a.py\nrm a.py", "line 2: after a FILE block comes another FILE block, a DELETE line"),
    ("RUN  ls", "line 1: RUN needs the command right after one space"),
    ("RUN ls\nRUN pwd", "line 2: a RUN reply is one line: nothing may follow the command"),
])
def test_malformed_replies_name_the_line_and_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(ReplyFormatError) as caught:
        parse_reply(text)
    assert str(caught.value).startswith(message)
    assert not accepted(text)


def test_a_reply_holds_at_most_four_file_blocks_and_the_grammar_says_so_too() -> None:
    from codeloop.agent.small_model.reply_format import MAX_FILE_BLOCKS

    blocks = [f"FILE a{k}.py\n```\nx = 1\n```\n" for k in range(MAX_FILE_BLOCKS + 1)]
    assert len(parse_reply("".join(blocks[:MAX_FILE_BLOCKS])).files) == MAX_FILE_BLOCKS
    with pytest.raises(ReplyFormatError, match=r"line 17: a reply holds at most 4 FILE blocks"):
        parse_reply("".join(blocks))
    assert LANGUAGE.fullmatch("".join(blocks[:MAX_FILE_BLOCKS])) and not LANGUAGE.fullmatch("".join(blocks))


def test_a_block_naming_a_path_again_ends_what_is_read_and_the_stream_can_stop_there() -> None:
    a, b = "FILE a.py\n```\nx = 1\n```\n", "FILE b.py\n```\ny = 2\n```\n"
    # The 1.5B model's way: its file, then the same file again, or a hunk against the file as it was.
    again = a + b + "\nFILE a.py\n<<<<<<< SEARCH\nx = 0\n=======\nx = 3\n>>>>>>> REPLACE\nDELETE c.py\n"
    assert parse_reply(again) == parse_reply(a + b) == FilesReply((FileBlock("a.py", "x = 1\n"), FileBlock("b.py", "y = 2\n")))
    assert repeated_block(again) == len(a + b) + 1 and repeated_block(a + b) is None
    assert parse_reply("DELETE a.py\nDELETE a.py\nFILE b.py\n```\n```\n") == FilesReply((FileBlock("a.py", None, deleted=True),))
    # What follows is still held to the format: the grammar's language is the parser's.
    with pytest.raises(ReplyFormatError, match=r"line 10: after FILE a\.py comes a fence"):
        parse_reply(a + b + "FILE a.py\nx = 1\n")
    # A line that only looks like a block inside a whole file is the file's text.
    inside = "FILE a.py\n```\nFILE a.py\n```\n"
    assert repeated_block(inside) is None and parse_reply(inside) == FilesReply((FileBlock("a.py", "FILE a.py\n"),))
    # Until the line is complete, the path may still grow (a.py2): no stop yet.
    assert repeated_block(a + "FILE a.py") is None and repeated_block(a + "FILE a.py\n") == len(a)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_stream_stopped_at_a_repeated_block_reads_as_the_whole_reply(data: st.DataObject) -> None:
    """Stopping where :func:`repeated_block` says changes nothing that is read, and the point,
    once found, stays where it is as the text grows (checked at every line as it streams)."""
    text = derive(RULES, data)
    stop = repeated_block(text)
    if stop is not None:
        assert parse_reply(text[:stop]) == parse_reply(text)
    ends = [i + 1 for i, c in enumerate(text) if c == "\n"]
    found = [s for end in ends if (s := repeated_block(text[:end])) is not None]
    assert all(s == stop for s in found) and (bool(found) == (stop is not None))
