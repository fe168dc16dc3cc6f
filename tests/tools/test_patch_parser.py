"""The v4a parser (loop spec Appendix A) with codex's leniency and messages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.tools.patch_parser import (
    AddFile,
    DeleteFile,
    PatchParseError,
    UpdateChunk,
    UpdateFile,
    parse_patch,
)


def test_a_parses_every_operation() -> None:
    patch = parse_patch(
        "*** Begin Patch\n*** Add File: path/add.py\n+abc\n+def\n*** Delete File: path/delete.py\n"
        "*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n"
        "+    return 123\n*** End Patch"
    )
    assert patch.hunks == (
        AddFile("path/add.py", "abc\ndef\n"),
        DeleteFile("path/delete.py"),
        UpdateFile(
            "path/update.py",
            "path/update2.py",
            (UpdateChunk("def f():", ("    pass",), ("    return 123",)),),
        ),
    )


def test_a_first_chunk_may_omit_the_context_marker() -> None:
    patch = parse_patch("*** Begin Patch\n*** Update File: f.py\n import foo\n+bar\n*** End Patch")
    chunk = UpdateChunk(None, ("import foo",), ("import foo", "bar"), sources=(0, -1))
    assert patch.hunks == (UpdateFile("f.py", None, (chunk,)),)


def test_a_end_of_file_marker_sets_the_flag() -> None:
    patch = parse_patch("*** Begin Patch\n*** Update File: t\n@@\n a\n+b\n*** End of File\n*** End Patch\n")
    hunk = patch.hunks[0]
    assert isinstance(hunk, UpdateFile) and hunk.chunks[0].is_end_of_file


@pytest.mark.parametrize(
    "wrapped",
    [
        "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
        '<<"EOF"\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF',
        "<<EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
        "apply_patch <<PATCH\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nPATCH\n",
    ],
)
def test_a_heredoc_wrappers_are_unwrapped(wrapped: str) -> None:
    assert parse_patch(wrapped).hunks == (DeleteFile("a"),)


def test_a_markers_are_trimmed_and_crlf_tolerated() -> None:
    patch = parse_patch("  *** Begin Patch \r\n  *** Delete File: a.txt  \r\n *** End Patch \r\n")
    assert patch.hunks == (DeleteFile("a.txt"),)


def test_a_empty_patch_parses_to_no_hunks() -> None:
    assert parse_patch("*** Begin Patch\n*** End Patch").hunks == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bad", "Invalid patch: The first line of the patch must be '*** Begin Patch'"),
        ("", "Invalid patch: The first line of the patch must be '*** Begin Patch'"),
        ("*** Begin Patch\nbad", "Invalid patch: The last line of the patch must be '*** End Patch'"),
        (
            "*** Begin Patch\n*** Update File: test.py\n*** End Patch",
            "Invalid patch hunk on line 2: Update file hunk for path 'test.py' is empty",
        ),
        (
            "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch",
            "Invalid patch hunk on line 2: '*** Frobnicate File: foo' is not a valid hunk header. "
            "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-x\nbad\n*** End Patch",
            "Invalid patch hunk on line 5: Expected update hunk to start with a @@ context marker, got: 'bad'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\nbad\n*** End Patch",
            "Invalid patch hunk on line 4: Unexpected line found in update hunk: 'bad'. Every line should "
            "start with ' ' (context line), '+' (added line), or '-' (removed line)",
        ),
    ],
)
def test_a_codex_error_messages(text: str, message: str) -> None:
    with pytest.raises(PatchParseError) as caught:
        parse_patch(text)
    assert str(caught.value) == message


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_a_any_text_parses_or_raises_parse_error(text: str) -> None:
    try:
        parse_patch(text)
    except PatchParseError as exc:
        assert str(exc).startswith("Invalid patch")


_marker_lines = st.sampled_from(
    ["*** Begin Patch", "*** End Patch", "*** Add File: a", "*** Update File: b", "*** Delete File: c",
     "*** Move to: d", "*** End of File", "@@", "@@ def f():", "+x", "-y", " z", "", "  ", "junk"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_marker_lines, max_size=12))
def test_a_marker_soup_parses_or_raises_parse_error(lines: list[str]) -> None:
    try:
        parse_patch("\n".join(lines))
    except PatchParseError as exc:
        assert str(exc).startswith("Invalid patch")


_line_text = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=20).filter(
    lambda s: "\n" not in s and "\r" not in s
)
_path = st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8}){0,2}\.txt", fullmatch=True)


@st.composite
def _hunks(draw: st.DrawFn) -> AddFile | DeleteFile | UpdateFile:
    kind = draw(st.sampled_from(["add", "delete", "update"]))
    path = draw(_path)
    if kind == "add":
        lines = draw(st.lists(_line_text, max_size=4))
        return AddFile(path, "".join(f"{line}\n" for line in lines))
    if kind == "delete":
        return DeleteFile(path)
    chunks = []
    for _ in range(draw(st.integers(1, 3))):
        old = draw(st.lists(_line_text, min_size=1, max_size=3))
        new = draw(st.lists(_line_text, max_size=3))
        context = draw(st.one_of(st.none(), _line_text.filter(lambda s: s != "")))
        chunks.append(UpdateChunk(context, tuple(old), tuple(new), False))
    move = draw(st.one_of(st.none(), _path))
    return UpdateFile(path, move, tuple(chunks))


def _render(hunks: list[AddFile | DeleteFile | UpdateFile]) -> str:
    out = ["*** Begin Patch"]
    for hunk in hunks:
        if isinstance(hunk, AddFile):
            out.append(f"*** Add File: {hunk.path}")
            out += ["+" + line for line in hunk.contents.split("\n")[:-1]]
        elif isinstance(hunk, DeleteFile):
            out.append(f"*** Delete File: {hunk.path}")
        else:
            out.append(f"*** Update File: {hunk.path}")
            if hunk.move_path:
                out.append(f"*** Move to: {hunk.move_path}")
            for chunk in hunk.chunks:
                out.append("@@" if chunk.change_context is None else f"@@ {chunk.change_context}")
                out += ["-" + line for line in chunk.old_lines]
                out += ["+" + line for line in chunk.new_lines]
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


@settings(max_examples=200, deadline=None)
@given(st.lists(_hunks(), min_size=1, max_size=4))
def test_a_generated_patches_round_trip(hunks: list[AddFile | DeleteFile | UpdateFile]) -> None:
    assert list(parse_patch(_render(hunks)).hunks) == hunks
