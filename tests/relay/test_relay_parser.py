"""The inbox tag parser against the relay spec's "Inbox Format" and "Command Syntax Reference"."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.relay.commands import (
    COMMAND_NAMES,
    CreateFile,
    DeleteFile,
    Done,
    EditFile,
    Message,
    ParseError,
    ReadFile,
    RelayCommand,
    RunCommand,
)
from codeloop.relay.parser import parse_inbox
from codeloop.relay.serializer import serialize_commands


def test_spec_syntax_examples_parse_to_their_commands() -> None:
    text = (
        '[CREATE_FILE path="relative/path"]\nfile contents\n[/CREATE_FILE]\n'
        '[EDIT_FILE path="relative/path" start_line="3" end_line="5"]\nreplacement content\n[/EDIT_FILE]\n'
        '[DELETE_FILE path="relative/path"]\n'
        '[READ_FILE path="relative/path"]\n'
        "[RUN_COMMAND]\ncommand text\n[/RUN_COMMAND]\n"
        "[MESSAGE]\nmessage text\n[/MESSAGE]\n"
        "[DONE]\nsummary text\n[/DONE]\n"
    )
    assert parse_inbox(text) == [
        CreateFile("relative/path", "file contents\n"),
        EditFile("relative/path", 3, 5, "replacement content\n"),
        DeleteFile("relative/path"),
        ReadFile("relative/path"),
        RunCommand("command text"),
        Message("message text"),
        Done("summary text"),
    ]


def test_rule_7_text_between_blocks_is_ignored() -> None:
    text = (
        "I'll create the file now. See [the docs](http://x) and [NOTE] this.\n"
        'Some prose mentioning [CREATE_FILE path="x"] mid-line is not a command.\n'
        '[CREATE_FILE path="a.txt"]\nA\n[/CREATE_FILE]\n'
        "Then I will run it.\n"
        "[/RUN_COMMAND]\n"
    )
    assert parse_inbox(text) == [CreateFile("a.txt", "A\n")]


def test_rule_1_opening_tag_at_start_of_trimmed_line() -> None:
    cmds = parse_inbox('   \t[READ_FILE path="a.py"]\n')
    assert cmds == [ReadFile("a.py")]
    assert cmds[0].line == 1


def test_rule_3_body_is_verbatim_with_indentation_and_blank_lines() -> None:
    body = "def f():\n    return 1\n\n\n    # trailing spaces   \n"
    assert parse_inbox(f'[CREATE_FILE path="f.py"]\n{body}[/CREATE_FILE]') == [CreateFile("f.py", body)]


def test_rule_3_crlf_bodies_keep_their_line_endings() -> None:
    text = '[CREATE_FILE path="w.bat"]\r\n@echo off\r\necho hi\r\n[/CREATE_FILE]\r\n'
    assert parse_inbox(text) == [CreateFile("w.bat", "@echo off\r\necho hi\r\n")]


def test_rule_4_closing_tag_is_exact_match_on_trimmed_line() -> None:
    text = '[CREATE_FILE path="doc.md"]\nsay [/CREATE_FILE] inline\n[/CREATE_FILE] x\n  [/CREATE_FILE]  \n'
    assert parse_inbox(text) == [CreateFile("doc.md", "say [/CREATE_FILE] inline\n[/CREATE_FILE] x\n")]


def test_opening_tags_inside_a_body_are_body_text() -> None:
    body = '[RUN_COMMAND]\nrm -rf /\n[/RUN_COMMAND]\n[DELETE_FILE path="x"]\n'
    assert parse_inbox(f'[CREATE_FILE path="proto.md"]\n{body}[/CREATE_FILE]\n') == [
        CreateFile("proto.md", body)
    ]


def test_rule_5_6_several_commands_in_order_of_appearance() -> None:
    text = '[READ_FILE path="b"]\n[MESSAGE]\nhi\n[/MESSAGE]\n[READ_FILE path="a"]\n'
    assert parse_inbox(text) == [ReadFile("b"), Message("hi"), ReadFile("a")]


def test_attributes_any_order_single_quotes_unknown_ignored() -> None:
    text = '[EDIT_FILE end_line=\'4\' note="x" start_line="2"  path = "a b/c.txt"]\nX\n[/EDIT_FILE]\n'
    assert parse_inbox(text) == [EditFile("a b/c.txt", 2, 4, "X\n")]


def test_parse_error_missing_required_attribute() -> None:
    [err] = parse_inbox('[EDIT_FILE path="a" start_line="1"]\nx\n[/EDIT_FILE]\n')
    assert isinstance(err, ParseError)
    assert err.command == "EDIT_FILE"
    assert "end_line" in err.message and "missing" in err.message


def test_parse_error_missing_path_on_self_closing_command() -> None:
    [err] = parse_inbox("[DELETE_FILE]\n")
    assert isinstance(err, ParseError) and "path" in err.message


def test_parse_error_non_integer_line_numbers() -> None:
    [err] = parse_inbox('[EDIT_FILE path="a" start_line="one" end_line="-2"]\nx\n[/EDIT_FILE]\n')
    assert isinstance(err, ParseError)
    assert "start_line" in err.message and "'one'" in err.message


def test_parse_error_unclosed_block_names_the_command_and_parsing_goes_on() -> None:
    text = 'intro\n[CREATE_FILE path="a.py"]\nprint(1)\n[READ_FILE path="b.py"]\n'
    cmds = parse_inbox(text)
    assert isinstance(cmds[0], ParseError)
    assert cmds[0].command == "CREATE_FILE" and cmds[0].line == 2
    assert "never closed" in cmds[0].message and "[/CREATE_FILE]" in cmds[0].message
    assert cmds[1:] == [ReadFile("b.py")]


def test_parse_error_opening_tag_without_bracket() -> None:
    [err] = parse_inbox('[READ_FILE path="a"\n')
    assert isinstance(err, ParseError) and "']'" in err.message


def test_one_line_blocks_and_text_after_opening_tag() -> None:
    text = "[RUN_COMMAND] ls -la [/RUN_COMMAND]\n[DONE] All set.\nTwo files.\n[/DONE]\n"
    assert parse_inbox(text) == [RunCommand("ls -la"), Done("All set.\nTwo files.")]


def test_empty_run_command_is_a_parse_error() -> None:
    [err] = parse_inbox("[RUN_COMMAND]\n   \n[/RUN_COMMAND]\n")
    assert isinstance(err, ParseError) and "empty" in err.message


def test_similar_names_are_not_tags() -> None:
    assert parse_inbox('[DONE_SOON]\n[MESSAGES]\nx\n[/MESSAGES]\n[READ_FILES path="a"]\n') == []


def test_byte_order_mark_is_ignored() -> None:
    assert parse_inbox('\ufeff[READ_FILE path="a"]\n') == [ReadFile("a")]


def test_line_numbers_point_at_opening_tags() -> None:
    text = 'a\nb\n[MESSAGE]\nx\n[/MESSAGE]\n\n[READ_FILE path="p"]\n'
    assert [c.line for c in parse_inbox(text)] == [3, 7]


# --- property tests -------------------------------------------------------------------

_tag_soup = st.lists(
    st.one_of(
        st.text(max_size=30),
        st.sampled_from([f"[{n}" for n in COMMAND_NAMES] + [f"[/{n}]" for n in COMMAND_NAMES]),
        st.sampled_from(['path="a"', "start_line=", '"', "]", "\n", "\r\n", "  ", "'", "="]),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(), _tag_soup))
def test_any_text_parses_without_raising(text: str) -> None:
    cmds = parse_inbox(text)
    assert all(
        isinstance(
            c, CreateFile | EditFile | DeleteFile | ReadFile | RunCommand | Message | Done | ParseError
        )
        for c in cmds
    )


_path = st.text(
    st.characters(blacklist_characters='"\n\r', blacklist_categories=("Cs",)), min_size=1, max_size=20
).filter(lambda p: p.strip() != "")
_line = st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=30)
_file_body = st.lists(st.tuples(_line, st.sampled_from(["\n", "\r\n"])), max_size=6).map(
    lambda pairs: "".join(a + b for a, b in pairs)
)
_text_body = st.lists(_line, max_size=5).map("\n".join).filter(lambda t: not t.endswith("\r"))


def _closing_free(name: str, body: str) -> bool:
    return all(line.strip() != f"[/{name}]" for line in body.split("\n"))


_commands: st.SearchStrategy[RelayCommand] = st.one_of(
    st.builds(CreateFile, _path, _file_body).filter(lambda c: _closing_free(c.name, c.content)),
    st.builds(EditFile, _path, st.integers(0, 10**6), st.integers(0, 10**6), _file_body).filter(
        lambda c: _closing_free(c.name, c.content)
    ),
    st.builds(DeleteFile, _path),
    st.builds(ReadFile, _path),
    st.builds(RunCommand, _text_body.filter(lambda t: t.strip() != "")).filter(
        lambda c: _closing_free(c.name, c.command)
    ),
    st.builds(Message, _text_body).filter(lambda c: _closing_free(c.name, c.text)),
    st.builds(Done, _text_body).filter(lambda c: _closing_free(c.name, c.summary)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_commands, max_size=8))
def test_round_trip_of_generated_command_lists(commands: list[RelayCommand]) -> None:
    assert parse_inbox(serialize_commands(commands)) == commands


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_commands, max_size=5),
    st.lists(st.sampled_from(["Sure.", "", "Plan: [step 1]", "ok\n"]), max_size=5),
)
def test_round_trip_with_prose_between_blocks(commands: list[RelayCommand], prose: list[str]) -> None:
    blocks = [serialize_commands([c]) for c in commands]
    mixed = "".join((prose[i] + "\n" if i < len(prose) else "") + block for i, block in enumerate(blocks))
    assert parse_inbox(mixed) == commands


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=" \t=\"'abp_-]x1", max_size=40))
def test_fast_tag_path_agrees_with_the_careful_attribute_reader(rest: str) -> None:
    from codeloop.relay.parser import _BlockError, _build_self_closing, _parse_attributes

    text = "[READ_FILE" + rest + "\n"
    got = parse_inbox(text)
    if rest and not rest[0].isspace() and rest[0] != "]":
        assert got == []
        return
    careful = _parse_attributes("READ_FILE", rest)
    if isinstance(careful, str):
        expected: RelayCommand = ParseError("READ_FILE", careful)
    else:
        try:
            expected = _build_self_closing("READ_FILE", careful[0], 1)
        except _BlockError as exc:
            expected = ParseError("READ_FILE", str(exc))
    assert got == [expected]
