"""atomic_write: the old file or the whole new one, never a half-written file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.environments import atomic
from codeloop.environments.atomic import atomic_write


def test_creates_a_new_file_with_umask_mode(tmp_path: Path) -> None:
    target = tmp_path / "new.txt"
    atomic_write(target, b"hello\n")
    assert target.read_bytes() == b"hello\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_replaces_content_and_keeps_the_existing_mode(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_bytes(b"old")
    target.chmod(0o750)
    atomic_write(target, b"#!/bin/sh\necho new\n")
    assert target.read_bytes() == b"#!/bin/sh\necho new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750


def test_leaves_no_temporary_files(tmp_path: Path) -> None:
    for i in range(3):
        atomic_write(tmp_path / "f.txt", str(i).encode())
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_failure_mid_write_keeps_the_old_file_and_removes_the_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "data.json"
    target.write_bytes(b'{"complete": true}')

    def failing_fsync(fd: int) -> None:
        # Simulates the disk failing after part of the data reached the temp file
        # (a real full disk cannot be produced safely in a test).
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="No space left"):
        atomic_write(target, b"x" * 100_000)
    assert target.read_bytes() == b'{"complete": true}'
    assert [p.name for p in tmp_path.iterdir()] == ["data.json"]


def test_directory_target_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        atomic_write(tmp_path, b"x")


def test_unwritable_directory_raises_and_writes_nothing(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    if os.geteuid() != 0:
        locked.chmod(0o500)
        try:
            with pytest.raises(PermissionError):
                atomic_write(locked / "f.txt", b"x")
            assert list(locked.iterdir()) == []
        finally:
            locked.chmod(0o700)
        return
    # Root ignores permission bits, so make the directory truly unwritable instead: a
    # read-only bind mount (real bubblewrap), with the write attempted inside it.
    code = (
        "import pathlib, sys\n"
        "from codeloop.environments.atomic import atomic_write\n"
        "try:\n    atomic_write(pathlib.Path(sys.argv[1]) / 'f.txt', b'x')\n"
        "except OSError as exc:\n    print(type(exc).__name__, exc.errno)\n    sys.exit(3)\n"
    )
    done = subprocess.run(
        ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--ro-bind", str(locked), str(locked),
         sys.executable, "-c", code, str(locked)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert list(locked.iterdir()) == []


def test_long_file_name_still_fits_the_temp_name(tmp_path: Path) -> None:
    target = tmp_path / ("n" * 255)
    atomic_write(target, b"ok")
    assert target.read_bytes() == b"ok"
