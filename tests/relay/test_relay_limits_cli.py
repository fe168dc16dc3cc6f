"""Issue 36 through the installed ``codeloop relay``: ``new --max-steps/--max-time`` stop a
session before one reply (or one command) too many, the outbox says so in plain words,
later replies are set aside in ``inbox/rejected/``, and ``relay limits`` raises the limit."""

from __future__ import annotations

import time
from pathlib import Path

from relay_helpers import Run, as_json

CONTINUE = ("Continue working on the task based on the results above. "
            "If the task is complete, send [DONE] with a summary.")


def _reply(root: Path, name: str, text: str) -> None:
    (root / "inbox" / name).write_text(text)


def _create(path: str) -> str:
    return f'[CREATE_FILE path="{path}"]\n{path}\n[/CREATE_FILE]\n'


def _prompt(outbox: Path) -> str:
    return outbox.read_text().split("=== PROMPT ===\n", 1)[1]


def _processes_with(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmdline and "pytest" not in cmdline:
                found.append(int(proc.name))
    return found


def test_step_limit_stops_sets_replies_aside_and_goes_on_when_raised(relay: Run, tmp_path: Path) -> None:
    root = tmp_path / "root"
    started = as_json(relay("new", "make files", "--max-steps", "2", "--json"))
    sid = started["sessionId"]
    assert started["limits"]["maxSteps"] == 2
    _reply(root, "r1.txt", _create("a.txt"))
    relay("step")
    assert _prompt(root / "outbox" / f"{sid}_seq0002.txt") == CONTINUE + "\n"
    _reply(root, "r2.txt", _create("b.txt"))
    second = as_json(relay("step", "--json"))
    [reached] = [e for e in second["events"] if e["kind"] == "limit_reached"]
    assert reached["limit"] == "steps"
    notice = _prompt(root / "outbox" / f"{sid}_seq0003.txt")
    assert notice.startswith("LIMIT REACHED: this relay session stops here")
    assert "--max-steps 2" in notice and "codeloop relay limits --max-steps N" in notice

    _reply(root, "r3.txt", _create("c.txt"))
    third = relay("step")
    assert "LIMIT REACHED" in third.stdout and "r3.txt was not applied" in third.stderr
    assert not (root / "workspace" / "c.txt").exists()  # never one step over
    rejected = root / "inbox" / "rejected" / f"{sid}_seq0003__r3.txt"
    assert rejected.read_text() == _create("c.txt")
    note = (rejected.parent / (rejected.name + ".note")).read_text()
    assert "r3.txt was not applied: session" in note and "paste the newest outbox to the model again" in note
    status = as_json(relay("status", "--json"))["sessions"][0]
    assert status["sequence"] == 3 and status["limits"]["maxSteps"] == 2

    raised = as_json(relay("limits", "--max-steps", "3", "--json"))
    assert raised["limitReached"] is None and raised["limits"]["maxSteps"] == 3
    assert _prompt(root / "outbox" / f"{sid}_seq0003.txt") == CONTINUE + "\n"  # written again, no notice
    _reply(root, "r4.txt", _create("d.txt"))
    relay("step")
    assert (root / "workspace" / "d.txt").read_text() == "d.txt\n"
    assert _prompt(root / "outbox" / f"{sid}_seq0004.txt").startswith("LIMIT REACHED")


def test_outboxes_under_a_limit_not_reached_are_those_of_a_session_without_limits(relay: Run,
                                                                                 tmp_path: Path) -> None:
    root = tmp_path / "root"
    texts = []
    for n, flags in enumerate(([], ["--max-steps", "5", "--max-time", "1h"])):
        workspace = tmp_path / f"ws{n}"
        sid = as_json(relay("new", "make files", "--workspace", str(workspace), *flags, "--json"))["sessionId"]
        _reply(root, "r.txt", _create("a.txt") + "[RUN_COMMAND]\necho hi\n[/RUN_COMMAND]\n")
        relay("step", "--session", sid)
        texts.append([(root / "outbox" / f"{sid}_seq{n:04d}.txt").read_text().replace(sid, "SID")
                      for n in (1, 2)])
    assert texts[0] == texts[1]


def test_time_limit_stops_the_running_command_and_the_rest_of_the_reply(relay: Run, tmp_path: Path) -> None:
    root = tmp_path / "root"
    sid = as_json(relay("new", "wait", "--max-time", "1s", "--timeout", "5", "--json"))["sessionId"]
    marker = "6124.75"
    _reply(root, "r1.txt", f"[RUN_COMMAND]\nsleep {marker} & sleep {marker}\n[/RUN_COMMAND]\n"
           + _create("after.txt") + "[MESSAGE]\nstill here\n[/MESSAGE]\n")
    report = as_json(relay("step", "--json"))
    results = [e["result"] for e in report["events"] if e["kind"] == "command_finished"]
    assert [r["success"] for r in results] == [False, False, True]
    # Its timeout was cut to the time left (1 s, not --timeout 5), then it was stopped.
    assert "timed out after 1 s" in results[0]["summary"]
    assert "(the session's time limit, --max-time, was used up)" in results[0]["summary"]
    assert results[1]["summary"].startswith("Not run: the session's time limit (--max-time) was used up")
    assert not (root / "workspace" / "after.txt").exists()
    deadline = time.monotonic() + 10  # a bound on reaping, not a measured threshold
    while _processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(f"sleep {marker}") == []  # the command and its background child died
    assert report["limits"]["commandSeconds"] >= 1
    outbox = (root / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "Not run: the session's time limit" in outbox
    assert _prompt(root / "outbox" / f"{sid}_seq0002.txt").startswith("LIMIT REACHED")
    assert "--max-time 1s" in outbox

    _reply(root, "r2.txt", _create("late.txt"))
    relay("step")
    assert not (root / "workspace" / "late.txt").exists()
    assert (root / "inbox" / "rejected" / f"{sid}_seq0002__r2.txt").exists()

    relay("limits", "--max-time", "10m")
    _reply(root, "r3.txt", _create("late.txt"))
    relay("step")
    assert (root / "workspace" / "late.txt").exists()


def test_bad_limits_are_one_line_errors_and_start_nothing(relay: Run, tmp_path: Path) -> None:
    for flags, text in ((["--max-steps", "0"], "--max-steps 0: give a whole number"),
                        (["--max-time", "soon"], "--max-time: 'soon' is no duration")):
        proc = relay("new", "x", *flags, check=False)
        assert proc.returncode != 0 and text in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "root" / "sessions").exists() or not list((tmp_path / "root" / "sessions").glob("*.json"))
    proc = relay("limits", "--max-steps", "4", check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr


def test_a_command_held_for_approval_at_the_last_step_waits_without_the_notice(relay: Run, tmp_path: Path) -> None:
    root = tmp_path / "root"
    sid = as_json(relay("new", "tidy", "--policy", "standard", "--max-steps", "1", "--json"))["sessionId"]
    (root / "workspace" / "build").mkdir()
    _reply(root, "r1.txt", "[RUN_COMMAND]\nrm -rf build\n[/RUN_COMMAND]\n" + _create("after.txt"))
    held = as_json(relay("step", "--json"))["held"]
    assert held is not None
    # The reply is not finished: its waiting outbox asks for nothing and says no limit is reached.
    assert not _prompt(root / "outbox" / f"{sid}_seq0002.txt").startswith("LIMIT REACHED")
    relay("approve", held["id"])
    assert not (root / "workspace" / "build").exists() and (root / "workspace" / "after.txt").exists()
    assert _prompt(root / "outbox" / f"{sid}_seq0002.txt").startswith("LIMIT REACHED")
