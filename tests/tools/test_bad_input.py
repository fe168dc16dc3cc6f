"""Every tool answers bad input with a clear error result and changes nothing (issue 2 "Bad input")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from .snapshot import snapshot
from .workspace_fixture import Workspace

CODELOOP = str(Path(sys.executable).with_name("codeloop"))


async def _error(ws: Workspace, name: str, args: dict[str, Any] | str) -> str:
    before = snapshot(ws.root)
    result = await ws.call(name, args)
    assert result.is_error, f"{name} {args} should fail, got: {result.output}"
    assert result.output.strip(), "an error result must say what went wrong"
    assert snapshot(ws.root) == before, "a failed call must not change the workspace"
    return result.output


MISSING = [
    ("read_file", {"file_path": "nope.txt"}),
    ("edit_file", {"file_path": "nope.txt", "old_string": "a", "new_string": "b"}),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: nope.txt\n@@\n-a\n+b\n*** End Patch"}),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch"}),
    ("list_dir", {"path": "nope"}),
    ("grep", {"pattern": "x", "path": "nope"}),
    ("glob", {"pattern": "*", "path": "nope"}),
    ("read_many_files", {"paths": ["nope/*.txt"]}),
]


@pytest.mark.parametrize(("name", "args"), MISSING, ids=[f"{n}-{i}" for i, (n, _) in enumerate(MISSING)])
async def test_missing_file(ws: Workspace, name: str, args: dict[str, Any]) -> None:
    output = await _error(ws, name, args)
    assert "nope" in output


DIRECTORY = [
    ("read_file", {"file_path": "d"}),
    ("edit_file", {"file_path": "d", "old_string": "a", "new_string": "b"}),
    ("write_file", {"file_path": "d", "content": "x"}),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: d\n*** End Patch"}),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: d\n@@\n-a\n+b\n*** End Patch"}),
    ("list_dir", {"path": "d/f.txt"}),
]


@pytest.mark.parametrize(("name", "args"), DIRECTORY, ids=[f"{n}-{i}" for i, (n, _) in enumerate(DIRECTORY)])
async def test_directory_where_a_file_is_expected(ws: Workspace, name: str, args: dict[str, Any]) -> None:
    ws.write("d/f.txt", "a\n")
    output = await _error(ws, name, args)
    assert "d" in output


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("read_file", {"file_path": "blob.bin"}),
        ("edit_file", {"file_path": "blob.bin", "old_string": "a", "new_string": "b"}),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: blob.bin\n@@\n-a\n+b\n*** End Patch"}),
    ],
)
async def test_binary_file_is_refused(ws: Workspace, name: str, args: dict[str, Any]) -> None:
    ws.write("blob.bin", b"a\x00\x01\x02\xff" * 100)
    output = await _error(ws, name, args)
    assert "blob.bin" in output


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("read_file", {"file_path": "latin1.txt"}),
        ("edit_file", {"file_path": "latin1.txt", "old_string": "caf", "new_string": "tea"}),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: latin1.txt\n@@\n-caf\n+tea\n*** End Patch"}),
    ],
)
async def test_invalid_utf8_is_reported(ws: Workspace, name: str, args: dict[str, Any]) -> None:
    ws.write("latin1.txt", b"caf\xe9\nna\xefve\n")
    output = await _error(ws, name, args)
    assert "latin1.txt" in output


async def test_invalid_utf8_does_not_break_grep(ws: Workspace) -> None:
    ws.write("latin1.txt", b"caf\xe9 au lait\n")
    result = await ws.call("grep", {"pattern": "au lait"})
    assert not result.is_error and "latin1.txt:1:" in result.output


async def test_invalid_regex(ws: Workspace) -> None:
    ws.write("a.txt", "x\n")
    output = await _error(ws, "grep", {"pattern": "(unclosed"})
    assert "(unclosed" in output


@pytest.mark.parametrize(
    ("name", "args"),
    [("glob", {"pattern": "src/[z-a].txt"}), ("grep", {"pattern": "x", "glob_filter": "[z-a]"})],
)
async def test_invalid_glob(ws: Workspace, name: str, args: dict[str, Any]) -> None:
    ws.write("src/a.txt", "x\n")
    output = await _error(ws, name, args)
    assert "[z-a]" in output


OUTSIDE = [
    ("read_file", {"file_path": "../outside.txt"}),
    ("read_file", {"file_path": "/etc/hostname"}),
    ("write_file", {"file_path": "../outside.txt", "content": "x"}),
    ("edit_file", {"file_path": "../outside.txt", "old_string": "secret", "new_string": "x"}),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Add File: ../outside2.txt\n+x\n*** End Patch"}),
    ("list_dir", {"path": ".."}),
    ("grep", {"pattern": "secret", "path": ".."}),
    ("glob", {"pattern": "*", "path": "/"}),
    ("read_file", {"file_path": "link/outside.txt"}),
]


@pytest.mark.parametrize(("name", "args"), OUTSIDE, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OUTSIDE)])
async def test_path_outside_the_workspace(ws: Workspace, name: str, args: dict[str, Any]) -> None:
    outside = ws.root.parent / "outside.txt"
    outside.write_text("secret\n")
    os.symlink(ws.root.parent, ws.root / "link")
    output = await _error(ws, name, args)
    assert "secret" not in output.replace("'secret'", "")
    assert outside.read_text() == "secret\n"
    assert not (ws.root.parent / "outside2.txt").exists()


WRONG_TYPES = [
    ("read_file", {"file_path": 7}, "'file_path' must be of type string, got integer"),
    ("read_file", {"file_path": "a", "offset": "3"}, "'offset' must be of type integer, got string"),
    ("write_file", {"file_path": "a"}, "missing required argument 'content'"),
    ("edit_file", {"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"},
     "'replace_all' must be of type boolean, got string"),
    ("apply_patch", {"patch": ["*** Begin Patch"]}, "'patch' must be of type string, got array"),
    ("shell", {"command": "true", "timeout_ms": 1.5}, "'timeout_ms' must be of type integer, got number"),
    ("grep", {"pattern": "x", "output_mode": "lines"}, "'output_mode' must be one of"),
    ("glob", {"pattern": None}, "'pattern' must be of type string, got null"),
    ("list_dir", {"depth": "2"}, "'depth' must be of type integer, got string"),
    ("read_many_files", {"paths": "a.txt"}, "'paths' must be of type array, got string"),
    ("read_file", '{"file_path": "a"', "not valid JSON"),
]


@pytest.mark.parametrize(("name", "args", "expected"), WRONG_TYPES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(WRONG_TYPES)])
async def test_arguments_of_the_wrong_type(ws: Workspace, name: str, args: Any, expected: str) -> None:
    output = await _error(ws, name, args)
    assert expected in output


async def test_ten_megabyte_single_line_is_truncated_by_characters(ws: Workspace) -> None:
    ws.write("huge.csv", "x," * 5_000_000)
    result = await ws.call("read_file", {"file_path": "huge.csv"})
    assert not result.is_error
    assert len(result.output) < 50_500
    assert "characters were removed from the middle" in result.output
    assert result.full_output_chars > 10_000_000


async def test_ten_megabyte_single_line_of_shell_output_is_truncated(ws: Workspace) -> None:
    result = await ws.call("shell", {"command": "head -c 10000000 /dev/zero | tr '\\0' 'y'"})
    assert len(result.output) < 30_500
    assert "[WARNING: Tool output was truncated." in result.output


async def test_failed_multi_chunk_update_leaves_the_file_byte_identical(ws: Workspace) -> None:
    ws.write("f.txt", "a\nb\nc\n")
    patch = "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+A\n@@\n-zzz\n+Z\n*** End Patch"
    await _error(ws, "apply_patch", {"patch": patch})
    assert ws.read("f.txt") == b"a\nb\nc\n"


def _as_nobody(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [CODELOOP, *args]
    if os.geteuid() == 0:
        # root ignores file modes, so a chmod 000 file only means something to another user.
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    # codeloop tool reads the user's config (issue 30): one nobody can read (none at all).
    env = {**os.environ, "CODELOOP_CONFIG_DIR": str(cwd / "no-user-config")}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None, reason="needs setpriv to drop root")
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("read_file", '{"file_path": "locked.txt"}'),
        ("edit_file", '{"file_path": "locked.txt", "old_string": "s", "new_string": "t"}'),
        ("write_file", '{"file_path": "lockeddir/new.txt", "content": "x"}'),
    ],
)
def test_permission_denied(name: str, args: str) -> None:
    # Not under pytest's tmp dir: concurrent pytest runs reset it to 0700, hiding it from nobody.
    root = Path(tempfile.mkdtemp(prefix="codeloop-perm-", dir="/tmp"))
    try:
        _check_permission_denied(root, name, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _check_permission_denied(root: Path, name: str, args: str) -> None:
    root.chmod(0o777)
    (root / "locked.txt").write_text("secret\n")
    (root / "locked.txt").chmod(0o000)
    (root / "lockeddir").mkdir()
    (root / "lockeddir").chmod(0o555)
    result = _as_nobody(root, "tool", name, "--args", args, "--cwd", str(root), "--json")
    assert result.returncode == 1, result.stderr
    assert '"is_error": true' in result.stdout
    assert "ermission denied" in result.stdout
    assert "Traceback" not in result.stderr
    assert not (root / "lockeddir" / "new.txt").exists()


@pytest.mark.parametrize("how", ["write_file", "apply_patch", "edit_file"])
def test_a_write_that_fails_midway_leaves_the_old_file_and_no_debris(tmp_path: Path, how: str) -> None:
    # A real mid-write failure: the file-size limit (ulimit -f, 20 KiB) makes the write
    # fail with EFBIG after part of the data went out; Python ignores SIGXFSZ.
    (tmp_path / "keep.txt").write_text("original\n")
    before = snapshot(tmp_path)
    big = "y" * 40_000
    if how == "write_file":
        args = json.dumps({"file_path": "keep.txt", "content": big})
        command = [CODELOOP, "tool", "write_file", "--args", args, "--cwd", str(tmp_path)]
    elif how == "edit_file":
        args = json.dumps({"file_path": "keep.txt", "old_string": "original", "new_string": big})
        command = [CODELOOP, "tool", "edit_file", "--args", args, "--cwd", str(tmp_path)]
    else:
        patch = tmp_path.parent / f"{tmp_path.name}.patch"
        patch.write_text(f"*** Begin Patch\n*** Update File: keep.txt\n@@\n-original\n+{big}\n*** End Patch\n")
        command = [CODELOOP, "apply-patch", "--cwd", str(tmp_path), str(patch)]
    done = subprocess.run(
        ["bash", "-c", 'ulimit -f 20; exec "$@"', "bash", *command], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "File too large" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert snapshot(tmp_path) == before


async def test_arguments_nested_too_deeply_are_a_clear_error(ws: Workspace) -> None:
    deep = '{"file_path": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert "nested too deeply" in await _error(ws, "read_file", deep)
