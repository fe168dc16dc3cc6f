"""Entry point of the ``codeloop`` console script.

``codeloop --help`` is the first thing most people run, and importing typer and click alone
costs more than the interpreter's own start. The root help is therefore also kept as text
(:mod:`codeloop.cli.root_help`) and printed without importing either, when the output would
be identical: the program is called ``codeloop`` and the terminal is at least as wide as
click's 80-column cap. ``tests/cli/test_root_help.py`` renders the real help and fails when
the text drifts. Every other invocation goes through the Typer app (:mod:`codeloop.cli.app`).
"""

from __future__ import annotations

import os
import sys

CLICK_MAX_WIDTH = 80
"""click formats help at ``min(terminal columns, 80) - 2``: at 80 columns or more it is fixed."""


def _help_is_the_stored_text(argv: list[str]) -> bool:
    if argv[1:] != ["--help"] or os.path.basename(argv[0]) != "codeloop":
        return False
    import shutil  # click measures the terminal this way (COLUMNS first, then the tty)

    return shutil.get_terminal_size().columns >= CLICK_MAX_WIDTH


def main() -> None:
    """Run ``codeloop`` with ``sys.argv``."""
    if _help_is_the_stored_text(sys.argv):
        from codeloop.cli.root_help import ROOT_HELP

        sys.stdout.write(ROOT_HELP)
        sys.stdout.flush()
        return
    from codeloop.cli.app import run_app

    run_app()


if __name__ == "__main__":
    main()
