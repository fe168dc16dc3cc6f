"""edit_file: exact replacement, uniqueness, fuzzy fallback (loop spec §3.3, §3.5)."""

from __future__ import annotations

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
