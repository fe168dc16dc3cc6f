"""apply_patch never half-applies and never touches what it did not mean to (issue 19)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeloop.environments.errors import WriteDeniedError
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.tools.apply_patch import apply_patch_text
from codeloop.tools.patch_apply import PatchApplyError

from .workspace_fixture import Workspace


def tree(root: Path) -> dict[str, tuple[str, bytes | str | None]]:
    """Every file (bytes), symlink (target) and directory under ``root``."""
    state: dict[str, tuple[str, bytes | str | None]] = {}
    for path in sorted(root.rglob("*")):
        key = path.relative_to(root).as_posix()
        if path.is_symlink():
            state[key] = ("link", os.readlink(path))
        elif path.is_dir():
            state[key] = ("dir", None)
        else:
            state[key] = ("file", path.read_bytes())
    return state


def patch(*body: str) -> str:
    return "*** Begin Patch\n" + "".join(line + "\n" for line in body) + "*** End Patch\n"


# 1. A refused patch writes nothing --------------------------------------------------------


@pytest.mark.parametrize(
    ("last", "named"),
    [
        (("*** Add File: ../outside.txt", "+x"), "Failed to write file ../outside.txt: "),
        (("*** Update File: keep.txt", "@@", "-not there", "+y"), "Failed to find expected lines in keep.txt:"),
        (("*** Update File: nope.txt", "@@", "-a", "+b"), "Failed to read file to update nope.txt: "),
        (("*** Delete File: nope.txt",), "Failed to delete file nope.txt: "),
        (("*** Update File: link/escape.txt", "@@", "-a", "+b"), "Failed to read file to update link/escape.txt: "),
        (("*** Update File: latin1.txt", "@@", "-caf", "+cafe"), "Failed to read file to update latin1.txt: "),
    ],
)
async def test_a_refused_patch_leaves_the_tree_byte_identical(
    ws: Workspace, tmp_path: Path, last: tuple[str, ...], named: str
) -> None:
    ws.write("keep.txt", "keep\n")
    ws.write("gone.txt", "bye\n")
    ws.write("latin1.txt", b"caf\xe9\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "escape.txt").write_text("a\n")
    (ws.root / "link").symlink_to(tmp_path / "elsewhere")
    before = tree(ws.root)
    result = await ws.call(
        "apply_patch",
        {
            "patch": patch(
                "*** Add File: notes/ok.txt", "+ok",
                "*** Update File: keep.txt", "@@", "-keep", "+changed",
                "*** Delete File: gone.txt",
                *last,
            )
        },
    )
    assert result.is_error
    assert result.output.startswith(named), result.output
    assert "Nothing was written" in result.output
    assert tree(ws.root) == before
    assert (tmp_path / "elsewhere" / "escape.txt").read_text() == "a\n"


async def test_a_non_utf8_file_is_refused_with_where_the_bad_byte_is(ws: Workspace) -> None:
    ws.write("latin1.txt", b"ok\ncaf\xe9\n")
    result = await ws.call("apply_patch", {"patch": patch("*** Update File: latin1.txt", "@@", "-ok", "+fine")})
    assert result.is_error
    assert "'latin1.txt' is not valid UTF-8 (byte 0xe9 at offset 6, line 2)" in result.output
    assert ws.read("latin1.txt") == b"ok\ncaf\xe9\n"


class _DenyWrites(LocalExecutionEnvironment):
    """A real environment whose write hook refuses some paths, as the sandbox's does."""

    def __init__(self, root: Path, denied: set[str]) -> None:
        super().__init__(root)
        self.denied = denied

    def check_write(self, path: str) -> None:
        if path in self.denied:
            raise WriteDeniedError(f"Writing {path!r} is not allowed here", path=path)


@pytest.mark.parametrize("denied", ["b.txt", "gone.txt"])
async def test_a_write_failing_midway_restores_what_was_written(tmp_path: Path, denied: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_bytes(b"a\r\n")
    (root / "b.txt").write_bytes(b"b\n")
    (root / "gone.txt").write_bytes(b"bye\n")
    (root / "sub").mkdir()
    before = tree(root)
    env = _DenyWrites(root, {denied})
    text = patch(
        "*** Update File: a.txt", "@@", "-a", "+A",
        "*** Add File: sub/new.txt", "+new",
        "*** Update File: b.txt", "@@", "-b", "+B",
        "*** Delete File: gone.txt",
    )
    with pytest.raises(PatchApplyError) as caught:
        await apply_patch_text(env, text)
    action = "delete" if denied == "gone.txt" else "write"
    assert str(caught.value).startswith(f"Failed to {action} file {denied}: Writing '{denied}' is not allowed here")
    assert str(caught.value).endswith("Nothing was written: the files already written by this patch were restored.")
    assert tree(root) == before


# 2. Byte-exact context --------------------------------------------------------------------


async def test_a_fuzzy_context_lines_keep_their_bytes(ws: Workspace) -> None:
    original = "def f():\n    s = \u201chi\u201d  \n\tx = 1\n    return x\t\n"
    ws.write("f.py", original)
    result = await ws.call(
        "apply_patch",
        {"patch": patch("*** Update File: f.py", "@@", '    s = "hi"', "    x = 1", "-    return x", "+    return x + 1")},
    )
    assert not result.is_error, result.output
    assert ws.read("f.py") == "def f():\n    s = \u201chi\u201d  \n\tx = 1\n    return x + 1\n".encode()


async def test_a_lines_outside_the_hunks_keep_their_bytes(ws: Workspace) -> None:
    ws.write("g.txt", "top \r\nmid\u00a0\nkeep\nold\nend\t")
    result = await ws.call("apply_patch", {"patch": patch("*** Update File: g.txt", "@@", " keep", "-old", "+new")})
    assert not result.is_error, result.output
    assert ws.read("g.txt") == "top \r\nmid\u00a0\nkeep\nnew\nend\t".encode()


# 3. Line endings, BOM, final newline --------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"one\r\ntwo\r\nthree\r\n", b"one\r\n2\r\n2b\r\nthree\r\n"),
        (b"\xef\xbb\xbfone\ntwo\nthree\n", b"\xef\xbb\xbfone\n2\n2b\nthree\n"),
        (b"one\ntwo\nthree", b"one\n2\n2b\nthree"),
        (b"one\r\ntwo\nthree\r\nfour\r\n", b"one\r\n2\r\n2b\r\nthree\r\nfour\r\n"),
        (b"one\ntwo\r\nthree\n", b"one\n2\n2b\nthree\n"),
    ],
    ids=["crlf", "bom", "no-final-newline", "mixed-crlf-dominant", "mixed-lf-dominant"],
)
async def test_a_file_keeps_its_endings_bom_and_final_newline(ws: Workspace, before: bytes, after: bytes) -> None:
    ws.write("e.txt", before)
    result = await ws.call("apply_patch", {"patch": patch("*** Update File: e.txt", "@@", " one", "-two", "+2", "+2b")})
    assert not result.is_error, result.output
    assert ws.read("e.txt") == after


async def test_a_appending_to_a_file_without_final_newline_keeps_it_so(ws: Workspace) -> None:
    ws.write("n.txt", b"a\r\nb")
    result = await ws.call("apply_patch", {"patch": patch("*** Update File: n.txt", "@@", " b", "+c", "*** End of File")})
    assert not result.is_error, result.output
    assert ws.read("n.txt") == b"a\r\nb\r\nc"


# 4. Moves -------------------------------------------------------------------------------------


@pytest.mark.parametrize("destination", ["m.txt", "./m.txt", "dir/../m.txt", "alias/m.txt"])
async def test_a_move_onto_itself_is_an_update_in_place(ws: Workspace, destination: str) -> None:
    ws.write("m.txt", "old\nkeep\n")
    (ws.root / "alias").symlink_to(".")
    (ws.root / "dir").mkdir()
    result = await ws.call(
        "apply_patch", {"patch": patch("*** Update File: m.txt", f"*** Move to: {destination}", "@@", "-old", "+new")}
    )
    assert not result.is_error, result.output
    assert ws.read("m.txt") == b"new\nkeep\n"


async def test_a_move_failing_to_write_keeps_the_source(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "src.txt").write_bytes(b"x\n")
    env = _DenyWrites(root, {"dst.txt"})
    with pytest.raises(PatchApplyError, match=r"Failed to write file dst\.txt"):
        await apply_patch_text(env, patch("*** Update File: src.txt", "*** Move to: dst.txt", "@@", "-x", "+y"))
    assert tree(root) == {"src.txt": ("file", b"x\n")}


# Earlier hunks are seen by later ones --------------------------------------------------------


async def test_a_delete_then_re_add_and_add_then_update(ws: Workspace) -> None:
    ws.write("d.txt", "old\n")
    result = await ws.call(
        "apply_patch",
        {
            "patch": patch(
                "*** Delete File: d.txt",
                "*** Add File: d.txt", "+fresh",
                "*** Add File: n.txt", "+one",
                "*** Update File: ./n.txt", "@@", "-one", "+two",
            )
        },
    )
    assert not result.is_error, result.output
    assert result.output == "Success. Updated the following files:\nA d.txt\nA n.txt\nM ./n.txt\nD d.txt\n"
    assert ws.read("d.txt") == b"fresh\n"
    assert ws.read("n.txt") == b"two\n"


async def test_a_update_after_delete_in_the_same_patch_is_refused(ws: Workspace) -> None:
    ws.write("d.txt", "old\n")
    result = await ws.call(
        "apply_patch", {"patch": patch("*** Delete File: d.txt", "*** Update File: d.txt", "@@", "-old", "+new")}
    )
    assert result.is_error
    assert "an earlier part of this patch deleted or moved it" in result.output
    assert ws.read("d.txt") == b"old\n"
