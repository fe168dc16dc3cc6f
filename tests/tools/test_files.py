"""read_file, read_many_files, write_file, list_dir (loop spec §3.3, §3.6)."""

from __future__ import annotations

from .workspace_fixture import Workspace

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


async def test_3_3_read_file_numbers_lines(ws: Workspace) -> None:
    ws.write("a.py", "import os\nprint(1)\n")
    result = await ws.call("read_file", {"file_path": "a.py"})
    assert result.output == "  1 | import os\n  2 | print(1)"


async def test_3_3_read_file_offset_and_limit(ws: Workspace) -> None:
    ws.write("n.txt", "".join(f"l{i}\n" for i in range(1, 11)))
    result = await ws.call("read_file", {"file_path": "n.txt", "offset": 4, "limit": 2})
    assert result.output.startswith("  4 | l4\n  5 | l5\n")
    assert "offset=6" in result.output


async def test_3_3_read_file_defaults_to_2000_lines(ws: Workspace) -> None:
    ws.write("big.txt", "".join(f"{i}\n" for i in range(1, 2501)))
    result = await ws.call("read_file", {"file_path": "big.txt"})
    assert "2000 | 2000" in result.full_output
    assert "2001 | 2001" not in result.full_output
    assert "offset=2001" in result.full_output


async def test_3_3_read_file_returns_images_as_image_data(ws: Workspace) -> None:
    ws.write("pic.png", PNG)
    result = await ws.call("read_file", {"file_path": "pic.png"})
    assert not result.is_error
    assert result.images[0].media_type == "image/png" and result.images[0].data == PNG


async def test_3_3_read_file_empty_file(ws: Workspace) -> None:
    ws.write("e.txt", "")
    result = await ws.call("read_file", {"file_path": "e.txt"})
    assert result.output == "e.txt is empty."


async def test_3_3_write_file_creates_parents_and_reports_bytes(ws: Workspace) -> None:
    result = await ws.call("write_file", {"file_path": "deep/er/f.txt", "content": "héllo"})
    assert result.output == "Wrote 6 bytes to deep/er/f.txt"
    assert ws.read("deep/er/f.txt") == "héllo".encode()


async def test_3_6_read_many_files_reads_paths_and_globs(ws: Workspace) -> None:
    ws.write("src/a.py", "A\n")
    ws.write("src/b.py", "B\n")
    ws.write("c.txt", "C\n")
    result = await ws.call("read_many_files", {"paths": ["src/*.py", "c.txt"]})
    assert not result.is_error
    for header, body in (("src/a.py", "A"), ("src/b.py", "B"), ("c.txt", "C")):
        assert f"--- {header} ---\n{body}" in result.output


async def test_3_6_read_many_files_notes_unreadable_files(ws: Workspace) -> None:
    ws.write("ok.txt", "fine\n")
    result = await ws.call("read_many_files", {"paths": ["ok.txt", "missing.txt"]})
    assert "--- ok.txt ---\nfine" in result.output
    assert "--- missing.txt ---\n[skipped:" in result.output


async def test_3_6_list_dir_with_depth(ws: Workspace) -> None:
    ws.write("src/pkg/m.py", "x")
    ws.write("README", "hello")
    one = await ws.call("list_dir", {})
    assert one.output.splitlines() == ["README (5 bytes)", "src/"]
    two = await ws.call("list_dir", {"path": ".", "depth": 3})
    assert "src/pkg/m.py (1 bytes)" in two.output.splitlines()


async def test_3_3_oversized_image_is_refused_before_reading(ws: Workspace) -> None:
    ws.write("huge.png", PNG + b"\x00" * 10_000_001)
    result = await ws.call("read_file", {"file_path": "huge.png"})
    assert result.is_error and "over the 10000000-byte limit" in result.output
    assert result.images == ()


async def _in_session(ws: Workspace, session: str, name: str, args: dict[str, object]):  # type: ignore[no-untyped-def]
    from codeloop.tools import ToolContext, execute_tool_call

    return await execute_tool_call(ws.registry, name, args, ws.env, ctx=ToolContext(session_id=session))


async def test_write_file_in_a_session_refuses_to_replace_a_file_it_has_not_read(ws: Workspace) -> None:
    original = '{\n  "host": "localhost",\n  "port": 80\n}\n'
    ws.write("settings.json", original)
    refused = await _in_session(ws, "s-unread", "write_file", {"file_path": "settings.json",
                                                                "content": '{"port": 8080}\n'})
    assert refused.is_error and ws.read("settings.json").startswith(b'{\n  "host"')  # nothing lost
    assert refused.output.startswith(f"settings.json already exists ({len(original)} bytes) and you have not read it in this "
                                     "session. write_file replaces the whole file: call read_file on settings.json")
    assert not (await _in_session(ws, "s-unread", "read_file", {"file_path": "./settings.json"})).is_error
    done = await _in_session(ws, "s-unread", "write_file", {"file_path": "settings.json", "content": "{}\n"})
    assert not done.is_error and ws.read("settings.json") == b"{}\n"


async def test_write_file_creates_new_files_and_rewrites_its_own_without_reading(ws: Workspace) -> None:
    first = await _in_session(ws, "s-new", "write_file", {"file_path": "new/a.py", "content": "x = 1\n"})
    again = await _in_session(ws, "s-new", "write_file", {"file_path": "new/a.py", "content": "x = 2\n"})
    assert not first.is_error and not again.is_error and ws.read("new/a.py") == b"x = 2\n"
    # What one session has read does not count for another.
    other = await _in_session(ws, "s-other", "write_file", {"file_path": "new/a.py", "content": "x = 3\n"})
    assert other.is_error and ws.read("new/a.py") == b"x = 2\n"


async def test_write_file_outside_a_session_is_not_checked(ws: Workspace) -> None:
    ws.write("a.txt", "old\n")
    result = await ws.call("write_file", {"file_path": "a.txt", "content": "new\n"})  # codeloop tool, spaces
    assert not result.is_error and ws.read("a.txt") == b"new\n"
