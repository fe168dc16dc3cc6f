"""``codeloop tool NAME --args JSON``: one tool call through the full pipeline, from a shell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.environments.sandbox import probe_bwrap

CODELOOP = str(Path(sys.executable).with_name("codeloop"))


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CODELOOP, *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def test_tool_prints_the_output(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\n")
    result = _run("tool", "read_file", "--args", '{"file_path": "a.py"}', "--cwd", str(tmp_path))
    assert result.returncode == 0
    assert result.stdout == "  1 | print(1)\n"


def test_tool_json_reports_truncation(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("z" * 60_000)
    result = _run("tool", "read_file", "--args", '{"file_path": "big.txt"}', "--cwd", str(tmp_path), "--json")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert set(data) == {"output", "full_output_chars", "is_error"}
    assert data["is_error"] is False
    assert data["full_output_chars"] == len("  1 | ") + 60_000
    assert "characters were removed from the middle" in data["output"]


def test_tool_error_exits_1(tmp_path: Path) -> None:
    result = _run("tool", "read_file", "--args", '{"file_path": "missing.txt"}', "--cwd", str(tmp_path), "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["is_error"] is True and "missing.txt" in data["output"]


def test_tool_unknown_name_and_bad_json_are_error_results(tmp_path: Path) -> None:
    unknown = _run("tool", "frobnicate", "--cwd", str(tmp_path))
    assert unknown.returncode == 1 and "Unknown tool 'frobnicate'" in unknown.stderr
    bad = _run("tool", "read_file", "--args", "{oops", "--cwd", str(tmp_path))
    assert bad.returncode == 1 and "not valid JSON" in bad.stderr
    assert "Traceback" not in unknown.stderr + bad.stderr


def test_tool_writes_through_the_pipeline(tmp_path: Path) -> None:
    result = _run(
        "tool", "write_file", "--args", '{"file_path": "n/x.txt", "content": "hi"}', "--cwd", str(tmp_path)
    )
    assert result.returncode == 0 and result.stdout == "Wrote 2 bytes to n/x.txt\n"
    assert (tmp_path / "n" / "x.txt").read_text() == "hi"


def test_tool_rejects_unknown_sandbox_mode(tmp_path: Path) -> None:
    result = _run("tool", "shell", "--args", '{"command": "true"}', "--cwd", str(tmp_path), "--sandbox", "nope")
    assert result.returncode == 1 and "--sandbox nope: unknown mode" in result.stderr


def test_tool_help_has_an_example() -> None:
    result = _run("tool", "--help")
    assert result.returncode == 0 and "Example:" in result.stdout


@pytest.mark.skipif(probe_bwrap() is not None, reason=f"bubblewrap cannot run here: {probe_bwrap()}")
def test_tool_sandbox_read_only_refuses_writes(tmp_path: Path) -> None:
    write = _run("tool", "write_file", "--args", '{"file_path": "x.txt", "content": "x"}',
                 "--cwd", str(tmp_path), "--sandbox", "read-only")
    shell = _run("tool", "shell", "--args", '{"command": "touch y.txt"}', "--cwd", str(tmp_path), "--sandbox", "read-only",
                 "--approval", "never-ask")  # the sandbox refuses it, not the approval mode
    assert write.returncode == 1 and "read-only" in write.stderr
    assert shell.returncode == 1
    assert not (tmp_path / "x.txt").exists() and not (tmp_path / "y.txt").exists()
