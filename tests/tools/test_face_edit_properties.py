"""The relay's EDIT_FILE/CREATE_FILE and spaces' editFile/createFile keep what they did not
mean to change (issue 19), run through each face's own entry point on a real workspace.

Properties over generated files (CRLF, mixed endings, BOM, no final newline; see
``gen_files``): no byte outside the replaced lines or text changes, new line breaks take the
file's dominant ending, a whole-file rewrite keeps a CRLF file CRLF and its BOM, and a failing
edit leaves the file byte-identical. Examples per test: ``CODELOOP_PROPERTY_EXAMPLES``.
"""

from __future__ import annotations

import asyncio
import base64
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.policy import preset
from codeloop.relay.commands import CreateFile, EditFile, RelayCommand
from codeloop.relay.executor import ExecutionLimits, execute_command
from codeloop.relay.results import CommandResult
from codeloop.spaces.operations import events_message_to_json
from codeloop.spaces.runs import run_message
from codeloop.tools.relay_tools import relay_pipeline
from codeloop.tools.text_endings import BOM, strip_ending, text_dominant_ending

from .test_edit_properties import _DECOR, PROPERTY, GenFile, gen_files

_NEW_LINES = st.lists(st.sampled_from(_DECOR), max_size=3).map(lambda decor: [f"R{k}:{d}" for k, d in enumerate(decor)])


def _in_workspace(data: bytes, run: Any) -> tuple[Any, bytes]:
    """``run(env)`` on a fresh workspace holding ``f.txt`` = ``data``; its result and the file after."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "ws"
        root.mkdir()
        (root / "f.txt").write_bytes(data)

        async def go() -> Any:
            env = LocalExecutionEnvironment(root, env_policy="core-only")
            await env.initialize()
            try:
                return await run(env)
            finally:
                await env.cleanup()

        result = asyncio.run(go())
        return result, (root / "f.txt").read_bytes()


def _relay(data: bytes, cmd: RelayCommand) -> tuple[CommandResult, bytes]:
    return _in_workspace(data, lambda env: execute_command(
        cmd, relay_pipeline(env, "permissive", 4000), "permissive", ExecutionLimits(), lambda effect: None))  # type: ignore[no-any-return]


def _spaces(data: bytes, *ops: dict[str, Any]) -> tuple[list[dict[str, Any]], bytes]:
    async def run(env: LocalExecutionEnvironment) -> list[dict[str, Any]]:
        message, _ = await run_message({"protocolVersion": "1.0", "operations": list(ops)}, env, preset("permissive"))
        return list(events_message_to_json(message)["events"])

    return _in_workspace(data, run)  # type: ignore[no-any-return]


def _bom(file: GenFile) -> str:
    return BOM if file.bom else ""


def _as_sent(lines: list[str], final_break: str) -> str:
    """Lines as a model sends them: LF breaks, the last one followed by ``final_break``."""
    return "\n".join(lines) + (final_break if lines else "")


# -- relay EDIT_FILE ----------------------------------------------------------------------------


@PROPERTY
@given(st.data())
def test_relay_edit_changes_only_the_replaced_lines(data: st.DataObject) -> None:
    file = data.draw(gen_files())
    count = len(file.lines)
    start = data.draw(st.integers(1, count))
    end = data.draw(st.integers(start, count))
    new = data.draw(_NEW_LINES)
    event(f"replacement lines: {len(new)}")
    result, after = _relay(file.data, EditFile("f.txt", start, end, _as_sent(new, data.draw(st.sampled_from(["", "\n"])))))
    assert result.success, result.summary
    ending = file.ending
    expected = file.lines[: start - 1] + [line + ending for line in new] + file.lines[end:]
    if not file.lines[-1].endswith("\n") and expected:
        expected[-1] = strip_ending(expected[-1])
    assert after == (_bom(file) + "".join(expected)).encode("utf-8")
    # Stated directly: the lines before and after the range keep their bytes.
    suffix = "".join(file.lines[end:]).encode("utf-8")
    assert after.endswith(suffix)
    if new or end < count or file.lines[-1].endswith("\n"):
        assert after.startswith((_bom(file) + "".join(file.lines[: start - 1])).encode("utf-8"))


@PROPERTY
@given(st.data())
def test_relay_edit_that_fails_leaves_the_file_byte_identical(data: st.DataObject) -> None:
    file = data.draw(gen_files())
    broken = data.draw(st.booleans())
    event("not UTF-8" if broken else "range past the end")
    original = file.data + (b"\xff\xfe tail" if broken else b"")
    count = len(file.lines)
    start = data.draw(st.integers(1, count))
    end = data.draw(st.integers(start, count)) if broken else count + data.draw(st.integers(1, 3))
    result, after = _relay(original, EditFile("f.txt", start, end, "X\n"))
    assert not result.success
    assert after == original


# -- relay CREATE_FILE and spaces createFile over an existing file -----------------------------


def _rewritten(file: GenFile, content: str) -> bytes:
    crlf = text_dominant_ending("".join(file.lines)) == "\r\n"
    body = content.replace("\n", "\r\n") if crlf and "\r\n" not in content else content
    return (_bom(file) + body).encode("utf-8")


@PROPERTY
@given(gen_files(), _NEW_LINES, st.sampled_from(["", "\n", "\r\n"]), st.booleans())
def test_a_whole_file_rewrite_keeps_crlf_and_the_bom(file: GenFile, new: list[str], final: str, relay: bool) -> None:
    content = "\r\n".join(new) + final if final == "\r\n" else _as_sent(new, final)
    event("content with CRLF" if "\r\n" in content else "content with LF")
    if relay:
        result, after = _relay(file.data, CreateFile("f.txt", content))
        assert result.success and result.summary == "Replaced 'f.txt'"
    else:
        events, after = _spaces(file.data, {"type": "createFile", "path": "f.txt", "content": content,
                                            "overwrite": True})
        assert events[0]["success"] and events[0]["bytesWritten"] == len(after)
    assert after == _rewritten(file, content)


def test_binary_content_and_files_that_are_not_text_are_written_exactly(tmp_path: Path) -> None:
    crlf = b"a\r\nb\r\n"
    sent = b"x\ny\n"
    events, after = _spaces(crlf, {"type": "createFile", "path": "f.txt", "content": base64.b64encode(sent).decode(),
                                   "encoding": "base64", "overwrite": True})
    assert events[0]["success"] and after == sent
    result, after = _relay(b"\xff\r\n\xfe\r\n", CreateFile("f.txt", "x\ny\n"))
    assert result.success and after == b"x\ny\n"


# -- spaces editFile ----------------------------------------------------------------------------


@PROPERTY
@given(st.data())
def test_spaces_edit_changes_only_the_replaced_text(data: st.DataObject) -> None:
    file = data.draw(gen_files())
    count = len(file.lines)
    first = data.draw(st.integers(0, count - 1))
    last = data.draw(st.integers(first + 1, count))
    old = "".join(file.lines[first:last])
    if data.draw(st.booleans()):
        old = strip_ending(old)  # the text up to, not including, the last line break
    new = _as_sent(data.draw(_NEW_LINES), data.draw(st.sampled_from(["", "\n"])))
    before = (_bom(file) + "".join(file.lines[:first])).encode("utf-8")
    after_text = file.data[len(before) + len(old.encode("utf-8")):]
    events, after = _spaces(file.data, {"type": "editFile", "path": "f.txt",
                                        "edits": [{"oldContent": old, "newContent": new}]})
    assert events[0]["success"], events
    assert after == before + new.replace("\n", file.ending).encode("utf-8") + after_text


@PROPERTY
@given(gen_files(), st.booleans())
def test_spaces_edit_that_fails_leaves_the_file_byte_identical(file: GenFile, broken: bool) -> None:
    event("not UTF-8" if broken else "second edit not found")
    original = file.data + (b"\xff tail" if broken else b"")
    first_line = strip_ending(file.lines[0])
    events, after = _spaces(original, {"type": "editFile", "path": "f.txt", "edits": [
        {"oldContent": first_line, "newContent": "changed\n"}, {"oldContent": "not in the file", "newContent": "x"}]})
    assert not events[0]["success"]
    assert events[0]["error"] == ("File is not valid UTF-8 text and cannot be edited" if broken
                                  else "edit 2 of 2: oldContent not found; nothing was changed")
    assert after == original


async def test_write_file_over_a_crlf_file_with_a_bom_keeps_both(tmp_path: Path) -> None:
    from codeloop.tools import execute_tool_call
    from codeloop.tools.sets import all_tools_registry

    (tmp_path / "f.txt").write_bytes(b"\xef\xbb\xbfold\r\nlines\r\n")
    env = LocalExecutionEnvironment(tmp_path)
    result = await execute_tool_call(all_tools_registry(), "write_file", {"file_path": "f.txt", "content": "new\ntext"},
                                     env)
    assert result.output == "Wrote 12 bytes to f.txt"
    assert (tmp_path / "f.txt").read_bytes() == b"\xef\xbb\xbfnew\r\ntext"
