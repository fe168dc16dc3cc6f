"""``codeloop apply-patch`` run as a user runs it: the installed command, in a subprocess."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/, so the tools test package imports
from tools.snapshot import FIXTURES, PARTIAL_SCENARIOS, scenario_names, snapshot

CODELOOP = str(Path(sys.executable).with_name("codeloop"))


def _run(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CODELOOP, *args], input=stdin, capture_output=True, text=True, cwd=cwd, timeout=60)


@pytest.mark.parametrize("name", scenario_names())
def test_a_codex_scenario_via_cli(name: str, tmp_path: Path) -> None:
    case = FIXTURES / name
    work = tmp_path / "work"
    work.mkdir()
    if (case / "input").exists():
        shutil.copytree(case / "input", work, dirs_exist_ok=True)
    mode = ["--partial"] if name in PARTIAL_SCENARIOS else []
    result = _run("apply-patch", *mode, "--cwd", str(work), str(case / "patch.txt"))
    assert "Traceback" not in result.stderr
    assert snapshot(work) == snapshot(case / "expected")


def test_cli_refused_patch_writes_nothing_without_partial(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_bytes(b"keep\n")
    patch = (
        "*** Begin Patch\n*** Add File: notes/ok.txt\n+ok\n*** Update File: keep.txt\n@@\n-keep\n+changed\n"
        "*** Add File: ../outside.txt\n+x\n*** End Patch\n"
    )
    before = snapshot(tmp_path)
    result = _run("apply-patch", "--cwd", str(tmp_path), "-", stdin=patch)
    assert result.returncode == 1
    assert result.stderr.startswith("Failed to write file ../outside.txt: ")
    assert "Nothing was written" in result.stderr
    assert snapshot(tmp_path) == before


def test_cli_success_summary_from_stdin(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a\n")
    (tmp_path / "d.txt").write_text("x\n")
    patch = (
        "*** Begin Patch\n*** Add File: n/new.txt\n+hi\n*** Update File: m.txt\n@@\n-a\n+b\n"
        "*** Delete File: d.txt\n*** End Patch\n"
    )
    result = _run("apply-patch", "--cwd", str(tmp_path), "-", stdin=patch)
    assert result.returncode == 0
    assert result.stdout == "Success. Updated the following files:\nA n/new.txt\nM m.txt\nD d.txt\n"
    assert (tmp_path / "m.txt").read_text() == "b\n"


def test_cli_default_reads_stdin_in_the_current_directory(tmp_path: Path) -> None:
    result = _run("apply-patch", stdin="*** Begin Patch\n*** Add File: x.txt\n+1\n*** End Patch", cwd=tmp_path)
    assert result.returncode == 0
    assert (tmp_path / "x.txt").read_text() == "1\n"


def test_cli_failure_goes_to_stderr_with_exit_1(tmp_path: Path) -> None:
    result = _run("apply-patch", "--cwd", str(tmp_path), "-", stdin="*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Invalid patch hunk on line 2: '*** Frobnicate File: foo' is not a valid hunk header.")


def test_cli_missing_patch_file_and_bad_cwd_are_clear(tmp_path: Path) -> None:
    missing = _run("apply-patch", "--cwd", str(tmp_path), str(tmp_path / "none.patch"))
    assert missing.returncode == 1 and "none.patch: not found" in missing.stderr
    bad_cwd = _run("apply-patch", "--cwd", str(tmp_path / "nodir"), "-", stdin="")
    assert bad_cwd.returncode == 1 and "not a directory" in bad_cwd.stderr
    assert "Traceback" not in missing.stderr + bad_cwd.stderr


def test_cli_path_escape_is_refused(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    result = _run("apply-patch", "--cwd", str(work), "-", stdin="*** Begin Patch\n*** Add File: ../evil.txt\n+x\n*** End Patch")
    assert result.returncode == 1
    assert "outside the workspace" in result.stderr
    assert not (tmp_path / "evil.txt").exists()


def test_cli_help_has_an_example() -> None:
    result = _run("apply-patch", "--help")
    assert result.returncode == 0 and "Example:" in result.stdout
