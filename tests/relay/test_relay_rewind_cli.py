"""``codeloop relay rewind`` (issue 35) through the installed command: what a reply's
RUN_COMMAND changed — an edit, an ignored file deleted, a new directory, a mode — comes back."""

from __future__ import annotations

import stat
from pathlib import Path

from relay_helpers import Run, as_json


def test_relay_rewind_puts_back_what_run_command_changed(relay: Run, tmp_path: Path) -> None:
    ws = tmp_path / "root" / "workspace"
    ws.mkdir(parents=True)
    (ws / "app.py").write_bytes(b"name = 'alpha'\r\n")
    (ws / ".gitignore").write_text(".env\n")
    (ws / ".env").write_text("TOKEN=1\n")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    sid = as_json(relay("new", "rework", "--json"))["sessionId"]
    inbox = tmp_path / "root" / "inbox"
    (inbox / "r1.txt").write_text("[RUN_COMMAND]\nsed -i 's/alpha/omega/' app.py && rm .env && mkdir d && "
                                  "echo x > d/y && chmod 700 run.sh\n[/RUN_COMMAND]\n")
    relay("step")
    (inbox / "r2.txt").write_text('[CREATE_FILE path="c.txt"]\nc\n[/CREATE_FILE]\n')
    relay("step")
    assert not (ws / ".env").exists() and (ws / "c.txt").exists()

    later = as_json(relay("rewind", "--to", "1", "--dry-run", "--json"))
    assert later["sessionId"] == sid and [(c["path"], c["action"]) for c in later["changes"]] == [("c.txt", "delete")]
    assert (ws / "c.txt").exists()

    done = relay("rewind", "--to", "0")
    assert "Rewound session" in done.stdout
    assert (ws / "app.py").read_bytes() == b"name = 'alpha'\r\n" and (ws / ".env").read_text() == "TOKEN=1\n"
    assert not (ws / "d").exists() and not (ws / "c.txt").exists()
    assert stat.S_IMODE((ws / "run.sh").stat().st_mode) == 0o644
