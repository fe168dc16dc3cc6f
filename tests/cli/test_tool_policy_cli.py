"""``codeloop tool`` applies the configured policy, ``--approval`` and the repository's trust
gate exactly as ``codeloop run`` does (issue 30), black box: the installed command, stdin
not a terminal (so a call that needs approval is refused, as in CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CODELOOP = str(Path(sys.executable).with_name("codeloop"))


def _tool(tmp_path: Path, name: str, args: dict[str, object], *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODELOOP_CONFIG_DIR": str(tmp_path / "user-config")}
    return subprocess.run([CODELOOP, "tool", name, "--args", json.dumps(args), "--cwd", str(tmp_path / "repo"),
                           *extra], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=60)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    return repo


def test_a_command_that_changes_files_needs_approval_and_without_a_terminal_does_not_run(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    refused = _tool(tmp_path, "shell", {"command": "touch made.txt"})
    assert refused.returncode == 1
    assert "no terminal to ask for approval: pass --approval never-ask" in refused.stderr
    assert not (repo / "made.txt").exists()
    # A read-only command needs no approval under the default mode (on-risk).
    assert _tool(tmp_path, "shell", {"command": "ls"}).returncode == 0


def test_approval_never_ask_runs_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    done = _tool(tmp_path, "shell", {"command": "touch made.txt"}, "--approval", "never-ask")
    assert done.returncode == 0, done.stderr
    assert (repo / "made.txt").exists()


def test_an_unknown_approval_mode_is_one_line_and_exit_1(tmp_path: Path) -> None:
    _repo(tmp_path)
    bad = _tool(tmp_path, "shell", {"command": "true"}, "--approval", "sometimes")
    assert bad.returncode == 1 and "unknown --approval 'sometimes'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_writing_codeloop_settings_asks_even_with_never_ask(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    args = {"file_path": ".codeloop/config.toml", "content": 'approval = "never-ask"\n'}
    refused = _tool(tmp_path, "write_file", args, "--approval", "never-ask")
    assert refused.returncode == 1
    assert not (repo / ".codeloop" / "config.toml").exists()


def test_an_untrusted_project_config_cannot_lower_the_approval_mode(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / ".codeloop").mkdir()
    (repo / ".codeloop" / "config.toml").write_text('approval = "never-ask"\n')
    refused = _tool(tmp_path, "shell", {"command": "touch made.txt"})
    assert refused.returncode == 1 and not (repo / "made.txt").exists()
    assert "codeloop trust" in refused.stderr  # the warning says how to trust it
    env = {**os.environ, "CODELOOP_CONFIG_DIR": str(tmp_path / "user-config")}
    subprocess.run([CODELOOP, "trust", str(repo), "--yes"], check=True, capture_output=True, env=env, timeout=60)
    done = _tool(tmp_path, "shell", {"command": "touch made.txt"})
    assert done.returncode == 0, done.stderr
    assert (repo / "made.txt").exists()


def test_a_trusted_project_hook_judges_the_call(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / ".codeloop").mkdir()
    (repo / ".codeloop" / "config.toml").write_text(
        '[[hooks]]\nevent = "pre_tool_call"\ncommand = "echo no reads today >&2; exit 2"\n')
    (repo / "a.txt").write_text("hello\n")
    untrusted = _tool(tmp_path, "read_file", {"file_path": "a.txt"})
    assert untrusted.returncode == 0 and "hello" in untrusted.stdout
    env = {**os.environ, "CODELOOP_CONFIG_DIR": str(tmp_path / "user-config")}
    subprocess.run([CODELOOP, "trust", str(repo), "--yes"], check=True, capture_output=True, env=env, timeout=60)
    denied = _tool(tmp_path, "read_file", {"file_path": "a.txt"})
    assert denied.returncode == 1 and "no reads today" in denied.stderr
