"""``codeloop index ...`` as a user runs it (real process, real index on disk)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def codeloop(*args: str, env_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODELOOP_INDEX_DIR": str(env_dir)}
    return subprocess.run([sys.executable, "-m", "codeloop.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_build_then_search_symbols_impact_json(sample_repo: Path, _index_dir: Path) -> None:
    built = codeloop("index", "build", "--repo", str(sample_repo), "--json", env_dir=_index_dir)
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["files_total"] == 23
    search = codeloop("index", "search", "flux capacitor", "--repo", str(sample_repo), "--json", env_dir=_index_dir)
    assert json.loads(search.stdout)[0]["heading"] == "Installation"
    scoped = codeloop("index", "search", "engine", "--path", "docs", "--repo", str(sample_repo), "--json",
                      env_dir=_index_dir)
    assert {h["path"] for h in json.loads(scoped.stdout)} == {"docs/guide.md"}
    symbols = codeloop("index", "symbols", "--repo", str(sample_repo), "--name", "Engine", env_dir=_index_dir)
    assert "pkg/core.py:5:1  class     Engine" in symbols.stdout
    impact = codeloop("index", "impact", "pkg/helpers.py", "--repo", str(sample_repo), "--json", env_dir=_index_dir)
    assert json.loads(impact.stdout)["inbound"] == ["pkg/core.py"]
    status = codeloop("index", "status", "--repo", str(sample_repo), "--json", env_dir=_index_dir)
    assert json.loads(status.stdout)["stale"] is False


def test_query_refreshes_a_stale_index_first(sample_repo: Path, _index_dir: Path) -> None:
    codeloop("index", "build", "--repo", str(sample_repo), env_dir=_index_dir)
    (sample_repo / "late.py").write_text("def latecomer():\n    pass\n")
    result = codeloop("index", "symbols", "--repo", str(sample_repo), "--name", "latecomer", env_dir=_index_dir)
    assert "late.py:1:1" in result.stdout
    assert "index refreshed: 1 added" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["index", "impact", "nope.py"], "nope.py is not in the index"),
    (["index", "ast", "../x.py"], "outside"),
    (["index", "search", "x", "--mode", "fuzzy"], "--mode 'fuzzy' is not one of"),
])
def test_bad_input_is_one_line_error(sample_repo: Path, _index_dir: Path, args: list[str], message: str) -> None:
    result = codeloop(*args, "--repo", str(sample_repo), env_dir=_index_dir)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_repo_directory(tmp_path: Path, _index_dir: Path) -> None:
    result = codeloop("index", "build", "--repo", str(tmp_path / "missing"), env_dir=_index_dir)
    assert result.returncode == 1 and "is not a directory" in result.stderr


def test_every_command_help_has_an_example(_index_dir: Path) -> None:
    for command in ("build", "search", "symbols", "ast", "impact", "tree", "status", "watch"):
        result = codeloop("index", command, "--help", env_dir=_index_dir)
        assert "Example:" in result.stdout, command
