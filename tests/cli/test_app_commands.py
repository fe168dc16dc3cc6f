"""The CLI registers only the module of the command it runs (a CLI call no longer imports every
face), and the table that says which module that is cannot drift from what the modules register."""

from __future__ import annotations

import subprocess
import sys

import typer
from typer.main import get_command

from codeloop.cli import app as cli_app


def _names(registrars: list) -> set[str]:  # type: ignore[type-arg]
    fresh = typer.Typer()

    @fresh.command()
    def version() -> None: ...

    for registrar in registrars:
        registrar(fresh)
    return set(get_command(fresh).commands) - {"version"}  # type: ignore[attr-defined]


def test_each_command_is_registered_by_the_function_the_table_names() -> None:
    by_registrar: dict[object, set[str]] = {}
    for name, registrar in cli_app.COMMANDS.items():
        by_registrar.setdefault(registrar, set()).add(name)
    for registrar, names in by_registrar.items():
        assert _names([registrar]) == names, registrar  # a name missing from the table fails here
    assert _names(list(by_registrar)) == set(cli_app.COMMANDS)


def _modules_after(*argv: str) -> set[str]:
    code = ("import sys\nfrom codeloop.cli.main import main\n"
            f"sys.argv = ['codeloop', *{list(argv)!r}]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(' '.join(m for m in sys.modules if m.startswith('codeloop.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return set(done.stdout.split())


def test_a_command_imports_its_own_module_and_not_the_others() -> None:
    spaces = _modules_after("spaces", "--help")
    assert "codeloop.cli.spaces" in spaces
    assert not {"codeloop.cli.run", "codeloop.cli.relay", "codeloop.cli.chat", "codeloop.llm"} & spaces
    rewind = _modules_after("rewind", "--help")
    assert "codeloop.cli.sessions" in rewind and "codeloop.cli.spaces" not in rewind
    everything = _modules_after("versio")  # not a command: every module, so click can say so
    assert {"codeloop.cli.run", "codeloop.cli.spaces", "codeloop.cli.tool"} <= everything


def test_commands_still_run_and_an_unknown_one_is_named() -> None:
    version = subprocess.run([sys.executable, "-m", "codeloop.cli.main", "version"], capture_output=True,
                             text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.strip()
    wrong = subprocess.run([sys.executable, "-m", "codeloop.cli.main", "sesions"], capture_output=True,
                           text=True, timeout=120)
    assert wrong.returncode == 2 and "No such command 'sesions'" in wrong.stderr
