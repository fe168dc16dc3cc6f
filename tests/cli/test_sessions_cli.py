"""``codeloop sessions`` and ``codeloop rewind`` as a user runs them (real logs on disk)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codeloop.agent import events as ev
from codeloop.cli.app import app, register
from codeloop.sessions import Checkpoints, SessionLog

register()
runner = CliRunner()


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CODELOOP_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def make_session(sid: str, workspace: Path) -> None:
    with SessionLog(sid) as log:
        log.append(ev.SessionStart(session_id=sid, profile="openai", model="m", working_directory=str(workspace)))
        log.append(ev.UserInput(session_id=sid, content="rename foo to bar"))
        log.append(ev.AssistantTextEnd(session_id=sid, text="Renamed."))
        log.append(ev.SessionEnd(session_id=sid, state="closed", reason="completed"))


def test_sessions_list_json_and_text(tmp_path: Path) -> None:
    make_session("s-1", tmp_path)
    result = runner.invoke(app, ["sessions", "list", "--json"])
    assert result.exit_code == 0
    [info] = json.loads(result.stdout)
    assert info["id"] == "s-1" and info["status"] == "completed" and info["first_input"] == "rename foo to bar"
    text = runner.invoke(app, ["sessions", "list"]).stdout
    assert "s-1" in text and "rename foo to bar" in text


def test_sessions_show_and_export(tmp_path: Path) -> None:
    make_session("s-1", tmp_path)
    shown = json.loads(runner.invoke(app, ["sessions", "show", "s-1", "--json"]).stdout)
    assert [e["kind"] for e in shown["events"]] == ["session_start", "user_input", "assistant_text_end", "session_end"]
    jsonl = runner.invoke(app, ["sessions", "export", "s-1"]).stdout
    assert [json.loads(line)["kind"] for line in jsonl.splitlines()][1] == "user_input"
    md = runner.invoke(app, ["sessions", "export", "s-1", "--format", "md"]).stdout
    assert "## Assistant (turn 1)\n\nRenamed." in md


def test_unknown_session_and_bad_format_are_one_line_errors() -> None:
    result = runner.invoke(app, ["sessions", "show", "missing"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no session 'missing'") and "Traceback" not in result.output
    result = runner.invoke(app, ["sessions", "export", "x", "--format", "html"])
    assert result.exit_code == 2 and "use jsonl or md" in result.stderr


def test_rewind_command_restores_and_refuses(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("v0\n")
    make_session("s-2", ws)
    cp = Checkpoints("s-2", ws, turn=1)
    cp.before_write(["f.txt"])
    (ws / "f.txt").write_text("v1\n")
    cp.after_write(["f.txt"])

    (ws / "f.txt").write_text("user edit\n")
    refused = runner.invoke(app, ["rewind", "s-2", "--to", "0"])
    assert refused.exit_code == 1 and "f.txt changed outside the session" in refused.stderr
    assert (ws / "f.txt").read_text() == "user edit\n"

    (ws / "f.txt").write_text("v1\n")
    done = runner.invoke(app, ["rewind", "s-2", "--to", "0", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["restored"] == ["f.txt"]
    assert (ws / "f.txt").read_text() == "v0\n"
