"""The one set of workspace operations (tools/workspace_ops.py) on a real local workspace:
typed errors, all-or-nothing writes, match rules, and the typed command outcome."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.tools import workspace_ops as ops

from .workspace_fixture import Workspace

# A byte-order mark is kept at the start of the file, outside any line (tested on its own).
_LINE = st.text(alphabet=st.characters(blacklist_characters="\n\r\ufeff", blacklist_categories=("Cs",)), max_size=8)
_LINES = st.lists(_LINE, min_size=1, max_size=12)


async def _kind(coro: object) -> str:
    with pytest.raises(ops.OperationError) as info:
        await coro  # type: ignore[misc]
    return info.value.kind


# -- pure text operations: properties -----------------------------------------------------------


@given(_LINES, st.data())
def test_replace_lines_then_the_inverse_gives_back_the_original(lines: list[str], data: st.DataObject) -> None:
    original = "\n".join(lines) + "\n"
    count = len(lines)
    start = data.draw(st.integers(1, count))
    end = data.draw(st.integers(start, count))
    replacement = data.draw(st.lists(_LINE, min_size=1, max_size=5))
    new_text = "".join(f"{line}\n" for line in replacement)
    changed = ops.replace_lines(original, start, end, new_text)
    removed = "".join(f"{line}\n" for line in lines[start - 1:end])
    restored = ops.replace_lines(changed, start, start + len(replacement) - 1, removed)
    assert restored == original


@given(_LINES, st.data())
def test_replace_lines_keeps_every_line_outside_the_range(lines: list[str], data: st.DataObject) -> None:
    original = "\r\n".join(lines) + "\r\n"
    start = data.draw(st.integers(1, len(lines)))
    end = data.draw(st.integers(start, len(lines)))
    changed = ops.replace_lines(original, start, end, "X\n")
    assert changed.split("\r\n") == [*lines[: start - 1], "X", *lines[end:], ""]


@given(st.text(max_size=30), st.text(min_size=1, max_size=4), st.text(max_size=4))
def test_unique_match_refuses_ambiguity_and_first_match_changes_only_the_first(
    text: str, old: str, new: str
) -> None:
    count = text.count(old)
    if count == 0:
        with pytest.raises(ops.OperationError) as info:
            ops.replace_text(text, old, new, "unique")
        assert info.value.kind == "no_match"
        return
    first, changed = ops.replace_text(text, old, new, "first")
    at = text.find(old)
    assert changed == 1 and first == text[:at] + new + text[at + len(old):]
    if count > 1:
        with pytest.raises(ops.OperationError) as info:
            ops.replace_text(text, old, new, "unique")
        assert (info.value.kind, info.value.count) == ("ambiguous", count)
    else:
        assert ops.replace_text(text, old, new, "unique") == (first, 1)
    assert ops.replace_text(text, old, new, "all") == (text.replace(old, new), count)


def test_empty_text_to_replace_is_refused() -> None:
    with pytest.raises(ops.OperationError) as info:
        ops.replace_text("abc", "", "x", "all")
    assert info.value.kind == "empty_match"


# -- files ------------------------------------------------------------------------------------------


async def test_create_reports_replaced_and_refuses_overwrite_and_directories(ws: Workspace) -> None:
    created = await ops.create_file(ws.env, "a/b.txt", "one")
    assert (created.replaced, created.bytes_written, ws.read("a/b.txt")) == (False, 3, b"one")
    assert await _kind(ops.create_file(ws.env, "a/b.txt", "two", overwrite=False)) == "exists"
    assert (await ops.create_file(ws.env, "a/b.txt", "two")).replaced is True
    assert await _kind(ops.create_file(ws.env, "a", "x")) == "is_directory"
    assert await _kind(ops.create_file(ws.env, "../out.txt", "x")) == "outside_workspace"
    assert ws.read("a/b.txt") == b"two" and not (ws.root.parent / "out.txt").exists()


async def test_size_limits_are_checked_before_anything_is_written_or_read(ws: Workspace) -> None:
    with pytest.raises(ops.OperationError) as info:
        await ops.create_file(ws.env, "big.txt", b"x" * 11, max_bytes=10)
    assert (info.value.kind, info.value.size, info.value.limit) == ("too_large", 11, 10)
    assert not (ws.root / "big.txt").exists()
    ws.write("big.txt", "x" * 11)
    with pytest.raises(ops.OperationError) as info:
        await ops.read_bytes(ws.env, "big.txt", max_bytes=10)
    assert (info.value.kind, info.value.size) == ("too_large", 11)
    assert await ops.read_text(ws.env, "big.txt", max_bytes=11) == "x" * 11


async def test_read_errors_are_typed(ws: Workspace) -> None:
    (ws.root / "dir").mkdir()
    ws.write("latin1.txt", b"caf\xe9")
    ws.write("nul.bin", b"\xff\x00")
    assert await _kind(ops.read_text(ws.env, "missing.txt")) == "not_found"
    assert await _kind(ops.read_text(ws.env, "dir")) == "is_directory"
    assert await _kind(ops.read_text(ws.env, "/etc/hostname")) == "outside_workspace"
    with pytest.raises(ops.OperationError) as info:
        await ops.read_text(ws.env, "latin1.txt")
    assert (info.value.kind, info.value.offset, info.value.binary) == ("not_text", 3, False)
    with pytest.raises(ops.OperationError) as info:
        await ops.read_text(ws.env, "nul.bin")
    assert info.value.binary is True
    assert await ops.read_bytes(ws.env, "latin1.txt") == b"caf\xe9"


async def test_text_edits_are_all_or_nothing(ws: Workspace) -> None:
    ws.write("f.txt", "a b a\n")
    edits = [ops.TextEdit("a", "A"), ops.TextEdit("zzz", "y")]
    with pytest.raises(ops.OperationError) as info:
        await ops.replace_text_in_file(ws.env, "f.txt", edits, match="first")
    assert (info.value.kind, info.value.edit_index) == ("no_match", 1)
    assert ws.read("f.txt") == b"a b a\n"
    assert await ops.replace_text_in_file(ws.env, "f.txt", edits[:1], match="first") == 1
    assert ws.read("f.txt") == b"A b a\n"
    assert await _kind(ops.replace_text_in_file(ws.env, "f.txt", [ops.TextEdit(" ", "_")])) == "ambiguous"


async def test_journal_hook_sees_the_exact_change_before_it_happens(ws: Workspace) -> None:
    ws.write("f.txt", "one\ntwo\n")
    seen: list[tuple[ops.PlannedChange, bool]] = []

    def before(change: ops.PlannedChange) -> None:
        seen.append((change, (ws.root / "f.txt").exists() and ws.read("f.txt") == b"one\ntwo\n"))

    await ops.replace_lines_in_file(ws.env, "f.txt", 2, 2, "TWO\n", before_change=before)
    await ops.delete_file(ws.env, "f.txt", before_change=before)
    await ops.run_command(ws.env, "echo x > ran.txt", timeout_ms=5000, before_change=before)
    assert seen == [
        (ops.PlannedChange("write", "f.txt", b"one\nTWO\n", replaced=True), True),
        (ops.PlannedChange("delete", "f.txt"), False),
        (ops.PlannedChange("process", command="echo x > ran.txt"), False),
    ]
    assert not (ws.root / "f.txt").exists() and ws.read("ran.txt") == b"x\n"


async def test_a_failing_hook_stops_the_change(ws: Workspace) -> None:
    def refuse(change: ops.PlannedChange) -> None:
        raise OSError("journal disk full")

    with pytest.raises(OSError, match="journal disk full"):
        await ops.create_file(ws.env, "new.txt", "x", before_change=refuse)
    with pytest.raises(OSError, match="journal disk full"):
        await ops.run_command(ws.env, "echo x > ran.txt", timeout_ms=5000, before_change=refuse)
    assert not (ws.root / "new.txt").exists() and not (ws.root / "ran.txt").exists()


async def test_delete_refuses_directories_and_missing_files_without_calling_the_hook(ws: Workspace) -> None:
    (ws.root / "dir").mkdir()
    called: list[ops.PlannedChange] = []
    assert await _kind(ops.delete_file(ws.env, "dir", before_change=called.append)) == "is_directory"
    assert await _kind(ops.delete_file(ws.env, "nope", before_change=called.append)) == "not_found"
    assert called == [] and (ws.root / "dir").is_dir()


# -- commands -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "status", "exit_code", "signal"),
    [
        ("echo hi", "ok", 0, None),
        ("exit 3", "failed", 3, None),
        ("exec python3 -c 'import os,signal as s;s.signal(1,s.SIG_DFL);os.kill(0,1)'", "killed", None, 1),
        ("kill -KILL $$", "killed", None, 9),
        ("sleep 30", "timed_out", None, 15),
    ],
)
async def test_command_outcomes_are_typed(
    ws: Workspace, command: str, status: str, exit_code: int | None, signal: int | None
) -> None:
    outcome = await ops.run_command(ws.env, command, timeout_ms=300 if status == "timed_out" else 30_000)
    assert (outcome.status, outcome.exit_code, outcome.signal) == (status, exit_code, signal)


async def test_a_command_that_cannot_start_says_so(ws: Workspace) -> None:
    from codeloop.environments.local import LocalExecutionEnvironment

    env = LocalExecutionEnvironment(ws.root, shell="/no/such/shell")
    outcome = await ops.run_command(env, "true", timeout_ms=1000)
    assert (outcome.status, outcome.exit_code, outcome.signal) == ("not_started", None, None)
    assert "/no/such/shell" in outcome.stderr


async def test_a_bad_working_directory_is_a_typed_error(ws: Workspace) -> None:
    ws.write("file.txt", "x")
    assert await _kind(ops.run_command(ws.env, "true", timeout_ms=1000, working_dir="nope")) == "not_found"
    assert await _kind(ops.run_command(ws.env, "true", timeout_ms=1000, working_dir="file.txt")) == "not_a_directory"
