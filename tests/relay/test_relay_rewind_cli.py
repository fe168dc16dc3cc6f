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

    # The rewind is taken back: every change of both replies returns, byte for byte and mode.
    preview = as_json(relay("redo", "--dry-run", "--json"))
    assert preview["dry_run"] is True and {c["path"] for c in preview["changes"]} == {
        "app.py", ".env", "d/y", "run.sh", "c.txt"}
    assert not (ws / "c.txt").exists()
    redone = relay("redo")
    assert "Redid the last rewind" in redone.stdout
    assert (ws / "app.py").read_bytes() == b"name = 'omega'\r\n" and not (ws / ".env").exists()
    assert (ws / "d" / "y").read_text() == "x\n" and (ws / "c.txt").read_text() == "c\n"
    assert stat.S_IMODE((ws / "run.sh").stat().st_mode) == 0o700
    again = relay("redo", check=False)
    assert again.returncode != 0 and "no rewind to redo" in again.stderr


def test_relay_redo_refuses_when_files_changed_since_the_rewind(relay: Run, tmp_path: Path) -> None:
    ws = tmp_path / "root" / "workspace"
    ws.mkdir(parents=True)
    (ws / "a.txt").write_text("one\n")
    as_json(relay("new", "edit", "--json"))
    (tmp_path / "root" / "inbox" / "r1.txt").write_text("[RUN_COMMAND]\necho two > a.txt\n[/RUN_COMMAND]\n")
    relay("step")
    relay("rewind", "--to", "0")
    assert (ws / "a.txt").read_text() == "one\n"
    (ws / "a.txt").write_text("mine\n")
    refused = relay("redo", check=False)
    assert refused.returncode != 0 and "a.txt" in refused.stderr and "--force" in refused.stderr
    assert (ws / "a.txt").read_text() == "mine\n"
    relay("redo", "--force")
    assert (ws / "a.txt").read_text() == "two\n"
