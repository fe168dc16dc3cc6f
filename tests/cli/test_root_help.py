"""``codeloop --help`` is printed from stored text (fast start); it must equal what the
Typer app renders, and other invocations must still reach the app."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.cli.root_help import ROOT_HELP

CODELOOP = str(Path(sys.executable).with_name("codeloop"))

RENDER_WITH_TYPER = """
import sys
sys.argv = ["codeloop", "--help"]
from codeloop.cli.app import run_app
run_app()
"""

FAST_PATH_IMPORTS = """
import sys
sys.argv = ["codeloop", "--help"]
from codeloop.cli.main import main
main()
print(sorted(m for m in ("typer", "click", "rich") if m in sys.modules), file=sys.stderr)
"""


def _env(columns: int) -> dict[str, str]:
    return {**os.environ, "COLUMNS": str(columns)}


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_stored_root_help_is_what_typer_renders(columns: int) -> None:
    rendered = subprocess.run([sys.executable, "-c", RENDER_WITH_TYPER], env=_env(columns),
                              capture_output=True, text=True, timeout=60, check=True).stdout
    assert rendered == ROOT_HELP, (
        "src/codeloop/cli/root_help.py is out of date; set ROOT_HELP to:\n" + rendered)


def test_console_script_help_prints_it_without_importing_typer_click_or_rich() -> None:
    done = subprocess.run([sys.executable, "-c", FAST_PATH_IMPORTS], env=_env(100),
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == ROOT_HELP
    assert done.stderr.strip() == "[]"
    script = subprocess.run([CODELOOP, "--help"], env=_env(100), capture_output=True, text=True, timeout=60)
    assert (script.returncode, script.stdout) == (0, ROOT_HELP)


def test_narrow_terminals_and_other_commands_go_through_the_app() -> None:
    narrow = subprocess.run([CODELOOP, "--help"], env=_env(60), capture_output=True, text=True, timeout=60)
    assert narrow.returncode == 0 and narrow.stdout != ROOT_HELP
    assert "Usage: codeloop [OPTIONS] COMMAND" in narrow.stdout
    sub = subprocess.run([CODELOOP, "run", "--help"], env=_env(100), capture_output=True, text=True, timeout=60)
    assert sub.returncode == 0 and "Example" in sub.stdout and sub.stdout != ROOT_HELP
    bad = subprocess.run([CODELOOP, "--hlep"], env=_env(100), capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "No such option" in bad.stderr
