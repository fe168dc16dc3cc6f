"""edit_file: exact replacement, uniqueness, fuzzy fallback (loop spec §3.3, §3.5)."""

from __future__ import annotations

from codeloop.tools import ToolContext, execute_tool_call

from .workspace_fixture import Workspace


async def test_3_3_exact_replacement(ws: Workspace) -> None:
    ws.write("a.py", "x = 1\ny = 2\n")
    result = await ws.call("edit_file", {"file_path": "a.py", "old_string": "y = 2", "new_string": "y = 3"})
    assert result.output == "Edited a.py: 1 replacement."
    assert ws.read("a.py") == b"x = 1\ny = 3\n"


async def test_3_3_not_unique_reports_the_count_and_lines(ws: Workspace) -> None:
    ws.write("a.py", "v = 0\nv = 0\nv = 0\n")
    result = await ws.call("edit_file", {"file_path": "a.py", "old_string": "v = 0", "new_string": "v = 1"})
    assert result.is_error
    assert "occurs 3 times (starting at lines 1, 2, 3)" in result.output
    assert ws.read("a.py") == b"v = 0\nv = 0\nv = 0\n"


async def test_3_3_replace_all(ws: Workspace) -> None:
    ws.write("a.py", "v = 0\nv = 0\n")
    result = await ws.call(
        "edit_file", {"file_path": "a.py", "old_string": "v = 0", "new_string": "v = 1", "replace_all": True}
    )
    assert result.output == "Edited a.py: 2 replacements."
    assert ws.read("a.py") == b"v = 1\nv = 1\n"


async def test_3_3_fuzzy_unicode_punctuation_is_reported(ws: Workspace) -> None:
    ws.write("t.md", "He said \u201chello\u201d \u2014 then left.\n")
    result = await ws.call(
        "edit_file", {"file_path": "t.md", "old_string": 'said "hello" - then', "new_string": "said bye, then"}
    )
    assert not result.is_error
    assert "fuzzy match" in result.output and "curly quotes" in result.output
    assert ws.read("t.md") == b"He said bye, then left.\n"


async def test_3_3_fuzzy_whitespace_reindents_new_string(ws: Workspace) -> None:
    ws.write("m.py", "class A:\n    def f(self):\n        return  1\n")
    result = await ws.call(
        "edit_file",
        {"file_path": "m.py", "old_string": "def f(self):\n    return 1", "new_string": "def f(self):\n    return 2"},
    )
    assert not result.is_error, result.output
    assert "matched lines 2-3 when whitespace and indentation are ignored" in result.output
    assert ws.read("m.py") == b"class A:\n    def f(self):\n        return 2\n"


async def test_3_3_not_found_shows_the_current_text_around_a_line(ws: Workspace) -> None:
    ws.write("c.py", "".join(f"line {i}\n" for i in range(1, 30)) + "def compute(a, b):\n    return a + b\n")
    result = await ws.call(
        "edit_file", {"file_path": "c.py", "old_string": "def compute(a, c):\n    return a * c", "new_string": "x"}
    )
    assert result.is_error
    assert "the current text around line 30" in result.output
    assert " 30 | def compute(a, b):" in result.output


async def test_3_3_edit_keeps_crlf_and_other_bytes(ws: Workspace) -> None:
    ws.write("w.txt", "a\r\nb\r\n")
    result = await ws.call("edit_file", {"file_path": "w.txt", "old_string": "b", "new_string": "c"})
    assert not result.is_error
    assert ws.read("w.txt") == b"a\r\nc\r\n"


async def test_3_3_empty_old_string_creates_a_new_file(ws: Workspace) -> None:
    result = await ws.call("edit_file", {"file_path": "new.py", "old_string": "", "new_string": "x\n"})
    assert result.output == "Created new.py (2 bytes)."
    again = await ws.call("edit_file", {"file_path": "new.py", "old_string": "", "new_string": "y\n"})
    assert again.is_error and "already exists" in again.output
    assert ws.read("new.py") == b"x\n"


async def test_3_3_identical_strings_are_refused(ws: Workspace) -> None:
    ws.write("a.py", "x\n")
    result = await ws.call("edit_file", {"file_path": "a.py", "old_string": "x", "new_string": "x"})
    assert result.is_error and "identical" in result.output


async def test_3_3_fuzzy_line_match_keeps_crlf_line_endings(ws: Workspace) -> None:
    ws.write("w.py", "def f():\r\n    return  1\r\nx = 2\r\n")
    result = await ws.call(
        "edit_file", {"file_path": "w.py", "old_string": "def f():\n    return 1", "new_string": "def f():\n    return 3"}
    )
    assert not result.is_error, result.output
    assert ws.read("w.py") == b"def f():\r\n    return 3\r\nx = 2\r\n"


WRITE_HINT = "stop using edit_file on it. Call read_file on"


async def test_issue10_second_failed_edit_of_small_file_suggests_write_file(ws: Workspace) -> None:
    ws.write("small.py", "def f():\n    return 1\n")
    bad = {"file_path": "small.py", "old_string": "completely different text", "new_string": "x"}
    first = await ws.call("edit_file", bad)
    second = await ws.call("edit_file", bad)
    assert first.is_error and WRITE_HINT not in first.output
    assert second.is_error and second.output.endswith(
        "\nThis is failed edit number 2 of small.py, which has only 2 lines: stop using edit_file on it. "
        "Call read_file on small.py, then write_file with its complete new content.")
    assert ws.read("small.py") == b"def f():\n    return 1\n"


async def test_issue10_no_write_file_hint_for_files_of_200_lines_or_more(ws: Workspace) -> None:
    ws.write("big.py", "".join(f"v{i} = {i}\n" for i in range(200)))
    bad = {"file_path": "big.py", "old_string": "nothing like this", "new_string": "x"}
    results = [await ws.call("edit_file", bad) for _ in range(3)]
    assert all(r.is_error and WRITE_HINT not in r.output for r in results)


async def test_issue10_successful_edit_resets_the_failure_count(ws: Workspace) -> None:
    ws.write("a.py", "x = 1\n")
    bad = {"file_path": "a.py", "old_string": "nothing like this", "new_string": "y"}
    await ws.call("edit_file", bad)
    ok = await ws.call("edit_file", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})
    assert not ok.is_error
    after = await ws.call("edit_file", bad)
    assert after.is_error and WRITE_HINT not in after.output


async def test_issue10_failures_are_counted_per_file_and_per_session(ws: Workspace) -> None:
    ws.write("a.py", "x = 1\n")
    ws.write("b.py", "y = 1\n")

    async def fail(path: str, session: str) -> str:
        args = {"file_path": path, "old_string": "nothing like this", "new_string": "z"}
        result = await execute_tool_call(ws.registry, "edit_file", args, ws.env, ctx=ToolContext(session_id=session))
        assert result.is_error
        return result.output

    await fail("a.py", "s1")
    assert WRITE_HINT not in await fail("b.py", "s1")
    assert WRITE_HINT not in await fail("a.py", "s2")
    assert WRITE_HINT in await fail("a.py", "s1")


async def test_issue19_one_crlf_line_replaced_by_two_writes_crlf(ws: Workspace) -> None:
    ws.write("w.txt", "a\r\nb\r\nc\r\n")
    result = await ws.call("edit_file", {"file_path": "w.txt", "old_string": "b", "new_string": "b1\nb2"})
    assert not result.is_error, result.output
    assert ws.read("w.txt") == b"a\r\nb1\r\nb2\r\nc\r\n"


async def test_issue19_lf_file_keeps_lf_and_crlf_in_new_string_is_kept_as_given(ws: Workspace) -> None:
    ws.write("l.txt", "a\nb\n")
    result = await ws.call("edit_file", {"file_path": "l.txt", "old_string": "b", "new_string": "b1\r\nb2\nb3"})
    assert not result.is_error, result.output
    assert ws.read("l.txt") == b"a\nb1\r\nb2\nb3\n"


async def test_issue19_punctuation_fuzzy_match_keeps_the_lines_it_did_not_change(ws: Workspace) -> None:
    ws.write("q.py", "say(\u201chi\u201d)\r\nx = 1\r\nend \u2014 ok\r\n")
    result = await ws.call(
        "edit_file",
        {"file_path": "q.py", "old_string": 'say("hi")\nx = 1\nend - ok', "new_string": 'say("hi")\nx = 2\nend - ok'},
    )
    assert not result.is_error, result.output
    assert "fuzzy match" in result.output
    assert ws.read("q.py") == "say(\u201chi\u201d)\r\nx = 2\r\nend \u2014 ok\r\n".encode()


async def test_issue19_whitespace_fuzzy_match_keeps_the_lines_it_did_not_change(ws: Workspace) -> None:
    ws.write("m.py", "class A:\n\tdef f(self):  \n\t\treturn  1\n\t# done\t\n")
    result = await ws.call(
        "edit_file",
        {
            "file_path": "m.py",
            "old_string": "def f(self):\n    return 1\n# done",
            "new_string": "def f(self):\n    return 2\n# done",
        },
    )
    assert not result.is_error, result.output
    assert ws.read("m.py") == b"class A:\n\tdef f(self):  \n\t    return 2\n\t# done\t\n"


async def test_issue20_text_meant_for_another_file_names_that_file(ws: Workspace) -> None:
    """Seen with the 1.5B model: the fix for stats.py sent to test_stats.py, retried unchanged."""
    ws.write("stats.py", "def last_n(values, n):\n    return values[len(values) - n + 1:]\n")
    ws.write("test_stats.py", "from stats import last_n\nassert last_n([1, 2], 1) == [2]\n")
    wrong = {"file_path": "test_stats.py", "old_string": "return values[len(values) - n + 1:]",
             "new_string": "return values[-n:]"}
    result = await ws.call("edit_file", wrong)
    assert result.is_error
    assert result.output.endswith("\nThat exact text is in stats.py: if stats.py is the file to change, "
                                  "call edit_file with file_path stats.py.")
    assert ws.read("test_stats.py") == b"from stats import last_n\nassert last_n([1, 2], 1) == [2]\n"
    again = await ws.call("edit_file", wrong)  # not "rewrite test_stats.py with write_file"
    assert again.output == result.output
    ws.write("copy.py", "def last_n(values, n):\n    return values[len(values) - n + 1:]\n")
    ambiguous = await ws.call("edit_file", wrong)  # two files hold it: no guess
    assert ambiguous.is_error and "That exact text is in" not in ambiguous.output
    ws.write("copy.py", "def last_n(values, n):\n    return values[len(values) - n + 2:]\n")
    partial = await ws.call("edit_file", {**wrong, "old_string": "def last_n(values, n):\n    return 0"})
    assert partial.is_error and "That exact text is in" not in partial.output  # the first line alone is not it


async def test_issue20_identical_strings_that_are_not_in_the_file_get_the_call_that_adds_them(ws: Workspace) -> None:
    # Seen with the 1.5B model asked to add a line: old_string and new_string both the new line.
    ws.write("requirements.txt", "flask==3.0.0\nclick==8.1.7\n")
    line = {"file_path": "requirements.txt", "old_string": "requests==2.31.0", "new_string": "requests==2.31.0"}
    result = await ws.call("edit_file", line)
    assert result.is_error and result.output == (
        "old_string and new_string are identical; nothing to change. requirements.txt does not contain that "
        "text yet. To add it, call write_file with the whole new content of requirements.txt: its 2 current "
        "lines, then `requests==2.31.0`.")
    ws.write("big.txt", "".join(f"line {i}\n" for i in range(300)))
    big = await ws.call("edit_file", {"file_path": "big.txt", "old_string": "new", "new_string": "new"})
    assert big.output.endswith("To add it after the last line, call edit_file with old_string `line 299` and "
                               "new_string holding `line 299`, a line break, then `new`.")
    ws.write("requirements.txt", "flask==3.0.0\nrequests==2.31.0\n")
    there = await ws.call("edit_file", line)
    assert there.output.startswith("old_string and new_string are identical; nothing to change.")
    assert "does not contain" not in there.output
