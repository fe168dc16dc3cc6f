"""Each command's behaviour through the real engine and LocalExecutionEnvironment
(in-process, real files and processes): errors the model reads, path and process safety,
EDIT_FILE fidelity, encodings, ordering and re-application of replies."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from codeloop.relay.config import RelayConfig, load_config
from codeloop.relay.engine import StepReport, start_session, step


def _root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def _new(tmp_path: Path, **settings: object) -> tuple[RelayConfig, str]:
    config = load_config(str(_root(tmp_path)), settings, environ={})
    state, _ = asyncio.run(start_session(config, "Create a calculator app"))
    return config, state.session_id


def _step(config: RelayConfig) -> StepReport:
    return asyncio.run(step(config))


def _reply(tmp_path: Path, text: str, name: str = "reply.txt", encoding: str = "utf-8") -> Path:
    path = _root(tmp_path) / "inbox" / name
    path.write_bytes(text.encode(encoding))
    return path


def _alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (killed, not yet reaped by init) counts as dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_parse_errors_reach_the_model_as_result_lines(tmp_path: Path) -> None:
    config, sid = _new(tmp_path)
    _reply(
        tmp_path,
        '[EDIT_FILE path="a.py" start_line="x" end_line="2"]\ny\n[/EDIT_FILE]\n[CREATE_FILE path="b.py"]\nno end\n',
    )
    _step(config)
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "[FAILED] EDIT_FILE: Parse error at line 1: start_line must be a whole line number" in second
    assert (
        "[FAILED] CREATE_FILE: Parse error at line 4: [CREATE_FILE] opened on line 4 is never closed"
        in second
    )


def test_reply_without_commands_is_reported_to_the_model(tmp_path: Path) -> None:
    config, sid = _new(tmp_path)
    _reply(tmp_path, "What language should I use?\n")
    _step(config)
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "[FAILED] REPLY: No command blocks were found in your reply." in second


def test_several_replies_are_applied_oldest_first_each_answering_the_next_outbox(tmp_path: Path) -> None:
    config, sid = _new(tmp_path)
    first = _reply(tmp_path, "[RUN_COMMAND]\necho one >> log.txt\n[/RUN_COMMAND]\n", "z.txt")
    second = _reply(tmp_path, "[RUN_COMMAND]\necho two >> log.txt\n[/RUN_COMMAND]\n", "a.txt")
    os.utime(first, (1_000_000, 1_000_000))
    os.utime(second, (2_000_000, 2_000_000))
    report = _step(config)
    assert report.replies == 2 and report.session.sequence_number == 3
    assert (_root(tmp_path) / "workspace" / "log.txt").read_text() == "one\ntwo\n"
    processed = sorted(p.name for p in (_root(tmp_path) / "inbox" / "processed").iterdir())
    assert processed == [f"{sid}_seq0001__z.txt", f"{sid}_seq0002__a.txt"]


def test_same_text_pasted_later_for_a_newer_outbox_is_applied_again(tmp_path: Path) -> None:
    config, _ = _new(tmp_path)
    text = "[RUN_COMMAND]\necho again >> log.txt\n[/RUN_COMMAND]\n"
    _reply(tmp_path, text)
    _step(config)
    _reply(tmp_path, text)
    _step(config)
    assert (_root(tmp_path) / "workspace" / "log.txt").read_text() == "again\nagain\n"


def test_edit_keeps_crlf_and_missing_final_newline_and_rejects_range_past_end(tmp_path: Path) -> None:
    config, sid = _new(tmp_path)
    target = _root(tmp_path) / "workspace" / "win.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree")
    _reply(
        tmp_path,
        '[EDIT_FILE path="win.txt" start_line="3" end_line="3"]\nTHREE\nFOUR\n[/EDIT_FILE]\n'
        '[EDIT_FILE path="win.txt" start_line="2" end_line="9"]\nnope\n[/EDIT_FILE]\n',
    )
    _step(config)
    assert target.read_bytes() == b"one\r\ntwo\r\nTHREE\r\nFOUR"
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert (
        "[FAILED] EDIT_FILE: Invalid line range 2-9 for 'win.txt': end_line 9 is past the end of the file, which has 4 lines"
        in second
    )


def test_edit_of_an_empty_file_points_to_create_file(tmp_path: Path) -> None:
    config, sid = _new(tmp_path)
    (_root(tmp_path) / "workspace" / "empty.txt").write_bytes(b"")
    _reply(tmp_path, '[EDIT_FILE path="empty.txt" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]\n')
    _step(config)
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert (
        "[FAILED] EDIT_FILE: Invalid line range 1-1 for 'empty.txt': the file is empty, so it has no lines "
        "to replace; write it with CREATE_FILE" in second
    )


def test_command_killed_by_sighup_is_reported_as_killed_not_as_unstartable(tmp_path: Path) -> None:
    # SIGHUP makes exit code -1, which once read as "could not start".
    config, sid = _new(tmp_path)
    # python3 resets SIGHUP to its default first: under nohup it is ignored, and bash cannot undo that.
    _reply(tmp_path, "[RUN_COMMAND]\nexec python3 -c 'import os,signal as s;s.signal(1,s.SIG_DFL);os.kill(0,1)'\n[/RUN_COMMAND]\n")
    _step(config)
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "[FAILED] RUN_COMMAND: Ran \"exec python3 -c 'import os,signal as s;s.signal(1,s.SIG_DFL);os.kill(0,1)'\": killed by signal 1" in second


def test_paths_outside_workspace_are_rejected_including_symlinks(tmp_path: Path) -> None:
    config, sid = _new(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    (_root(tmp_path) / "workspace" / "link").symlink_to(tmp_path)
    _reply(
        tmp_path,
        '[CREATE_FILE path="../escape.txt"]\nx\n[/CREATE_FILE]\n'
        '[READ_FILE path="link/secret.txt"]\n'
        '[DELETE_FILE path="/etc/hostname"]\n',
    )
    _step(config)
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert second.count("REJECTED: Path is outside workspace") == 3
    assert "top secret" not in second
    assert not (_root(tmp_path) / "escape.txt").exists()


def test_hung_command_with_open_pipes_times_out_and_its_group_is_killed(tmp_path: Path) -> None:
    config, sid = _new(tmp_path, timeout=1)
    pid_file = tmp_path / "child.pid"
    _reply(
        tmp_path,
        f"[RUN_COMMAND]\n(echo $$ > /dev/null; sh -c 'echo $$ > {pid_file}; exec sleep 60') &\necho started\nsleep 60\n"
        "[/RUN_COMMAND]\n",
    )
    start = time.monotonic()
    _step(config)
    assert time.monotonic() - start < 20
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    assert "[FAILED] RUN_COMMAND:" in second and "timed out after 1 s" in second
    assert "Output: started" in second
    assert not _alive(int(pid_file.read_text()))


def test_command_output_is_truncated_to_the_configured_limit(tmp_path: Path) -> None:
    config, sid = _new(tmp_path, output_limit=300)
    _reply(tmp_path, "[RUN_COMMAND]\nseq 1 20000\n[/RUN_COMMAND]\n")
    _step(config)
    second = (_root(tmp_path) / "outbox" / f"{sid}_seq0002.txt").read_text()
    output = second.split("  Output:\n", 1)[1].split("\n\n", 1)[0]
    assert "characters of output omitted" in output
    assert "    1\n" in output and output.rstrip().endswith("20000")
    assert len(output.replace("\n    ", "\n")) < 400


def test_utf16_reply_from_notepad_is_read(tmp_path: Path) -> None:
    config, _ = _new(tmp_path)
    _reply(tmp_path, '\ufeff[CREATE_FILE path="é.txt"]\nünïcode\n[/CREATE_FILE]\n', encoding="utf-16-le")
    _step(config)
    assert (_root(tmp_path) / "workspace" / "é.txt").read_text() == "ünïcode\n"
