"""Issue 32 through the installed ``codeloop relay step``: a READ_FILE of a 3 GB sparse file is
a note in the next outbox (the read is bounded before it reads; the step runs under a 1.5 GB
address-space limit, so a read taking the file whole fails), and a reply whose application
fails for any reason is moved to ``inbox/rejected/`` with a note while later steps go on."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

from relay_helpers import CODELOOP, Run, as_json, clean_env

SPARSE_BYTES = 3 * 1024**3
ADDRESS_SPACE = 1536 * 1024**2


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _step(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CODELOOP, "relay", "step", "--root", str(root)], capture_output=True, text=True,
                          env=clean_env(), timeout=120, preexec_fn=_limited)


def test_read_file_of_a_3_gb_sparse_file_is_a_note_and_later_steps_go_on(relay: Run, tmp_path: Path) -> None:
    root = tmp_path / "root"
    sid = as_json(relay("new", "look at the data", "--json"))["sessionId"]
    with open(root / "workspace" / "big.bin", "wb") as f:
        f.truncate(SPARSE_BYTES)
    (root / "inbox" / "a.txt").write_text('[READ_FILE path="big.bin"]\n')
    first = _step(root)
    assert first.returncode == 0 and "Traceback" not in first.stderr, first.stderr
    outbox = (root / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert f"'big.bin' is {SPARSE_BYTES} bytes (3.0 GB), over the" in outbox and "MemoryError" not in outbox
    (root / "inbox" / "b.txt").write_text("[MESSAGE]\nnoted\n[/MESSAGE]\n")
    second = _step(root)
    assert second.returncode == 0, second.stderr
    assert (root / "outbox" / f"{sid}_seq0003.txt").exists()
    assert list((root / "inbox" / "processing").iterdir()) == []


def test_a_reply_that_fails_is_set_aside_with_a_note_and_the_next_step_applies_the_next(relay: Run,
                                                                                       tmp_path: Path) -> None:
    root = tmp_path / "root"
    sid = as_json(relay("new", "make notes", "--json"))["sessionId"]
    journals = root / "sessions" / "journal"
    # A journal this reply cannot be applied over (as a crash of an older version, or a disk
    # fault, leaves one): applying the reply fails.
    journals.mkdir(parents=True, exist_ok=True)
    (journals / f"{sid}_seq0001.jsonl").write_text('{"sessionId": "x"}\n{not json\n')
    (root / "inbox" / "a.txt").write_text('[CREATE_FILE path="a.txt"]\nfirst\n[/CREATE_FILE]\n')
    failed = _step(root)
    assert failed.returncode == 0 and "Traceback" not in failed.stderr, failed.stdout + failed.stderr
    rejected = root / "inbox" / "rejected" / f"{sid}_seq0001__a.txt"
    assert rejected.exists() and "rejected" in failed.stdout + failed.stderr
    note = (rejected.parent / (rejected.name + ".note")).read_text()
    assert "a.txt was not applied: applying it failed" in note and "is damaged at line 2" in note
    assert "put the reply" in note and "inbox again" in note
    assert list((root / "inbox" / "processing").iterdir()) == []
    (root / "inbox" / "b.txt").write_text('[CREATE_FILE path="b.txt"]\nsecond\n[/CREATE_FILE]\n')
    later = _step(root)
    assert later.returncode == 0, later.stdout + later.stderr
    assert (root / "workspace" / "b.txt").read_text() == "second\n"
    assert (root / "outbox" / f"{sid}_seq0002.txt").exists()
