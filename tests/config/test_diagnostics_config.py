"""``diagnostics =`` in config.toml (issue 21): on/off, commands as strings or tables, clear
errors, both files' commands, and a project's commands only once trusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.config import ConfigError, load_config, needs_trust, parse_config
from codeloop.policy.trust import trust
from codeloop.tools.diagnostics import DEFAULT_DIAGNOSTIC_TIMEOUT, DiagnosticCommand


def test_off_on_and_commands() -> None:
    assert parse_config("diagnostics = false\n", Path("c.toml")).diagnostics is False
    assert parse_config("model = 'm'\n", Path("c.toml")).diagnostics is None
    config = parse_config('model = "m"\ndiagnostics = ["ruff check --quiet {file}", '
                          '{ command = "tsc --noEmit", paths = ["*.ts", "*.tsx"], timeout = 90 }]\n', Path("c.toml"))
    assert config.diagnostics is True
    assert config.diagnostic_commands == (
        DiagnosticCommand("ruff check --quiet {file}", (), DEFAULT_DIAGNOSTIC_TIMEOUT, "c.toml:2"),
        DiagnosticCommand("tsc --noEmit", ("*.ts", "*.tsx"), 90.0, "c.toml:2"))
    tables = parse_config('[[diagnostics]]\ncommand = "shellcheck {file}"\npaths = "*.sh"\n', Path("c.toml"))
    assert tables.diagnostic_commands[0].paths == ("*.sh",)


@pytest.mark.parametrize(("text", "message"), [
    ('diagnostics = "ruff"\n', r"c\.toml:1: diagnostics must be false, true or a list of commands"),
    ("diagnostics = [3]\n", r"diagnostics entry #1 must be a command string or a table"),
    ('diagnostics = ["ok", { comand = "x" }]\n', r"entry #2 has the unknown key 'comand'; did you mean 'command'\?"),
    ('diagnostics = [""]\n', r"entry #1 needs command = "),
    ('diagnostics = [{ command = "x", timeout = 0 }]\n', r"timeout must be a positive number"),
    ('diagnostics = [{ command = "x", paths = [1] }]\n', r"paths must be a list of patterns"),
    ('diagnostic = false\n', r"unknown key 'diagnostic'; did you mean 'diagnostics'\?"),
])
def test_bad_entries_name_the_file_line_and_fix(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(text, Path("c.toml"))


def test_both_files_commands_run_and_the_project_switch_wins(dirs: tuple[Path, Path]) -> None:
    user, ws = dirs
    user.write_text('diagnostics = ["ruff check --quiet {file}"]\n')
    project = ws / ".codeloop" / "config.toml"
    project.write_text('diagnostics = ["mypy {file}"]\n')
    trust(project, project.read_bytes())
    config = load_config(ws)
    assert config.diagnostics is True
    assert [c.command for c in config.diagnostic_commands] == ["ruff check --quiet {file}", "mypy {file}"]
    project.write_text("diagnostics = false\n")  # harmless: applies without trust
    config = load_config(ws)
    assert config.diagnostics is False and config.warnings == ()


def test_an_untrusted_projects_commands_are_dropped_with_a_warning(dirs: tuple[Path, Path]) -> None:
    user, ws = dirs
    user.write_text("diagnostics = false\n")
    project = ws / ".codeloop" / "config.toml"
    project.write_text('model = "m"\ndiagnostics = ["touch pwned"]\n')
    assert list(needs_trust(parse_config(project.read_text(), project))) == ["diagnostics"]
    config = load_config(ws)
    assert config.diagnostic_commands == () and config.diagnostics is False  # the user's setting stands
    assert config.model == "m" and len(config.warnings) == 1
    assert "ignored diagnostics until you trust this file" in config.warnings[0]
    trust(project, project.read_bytes())
    config = load_config(ws)
    assert [c.command for c in config.diagnostic_commands] == ["touch pwned"] and config.diagnostics is True
