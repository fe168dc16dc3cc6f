"""The interactive chat of ``codeloop run`` (no TASK), driven through a real terminal:
tmux runs the command in a pty, keys are sent with ``send-keys`` and the screen is read
with ``capture-pane``. The model is the loopback scripted server (tests/cli/chat_server.py)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer, text_reply, tool_reply
from test_run_cli import CODELOOP, isolated_env

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Pane:
    """One tmux server (private socket) running ``codeloop run`` in a 160x50 terminal."""

    def __init__(self, socket: str, command: str) -> None:
        self.socket = socket
        self.tmux("new-session", "-d", "-x", "160", "-y", "50", command)
        self.tmux("set-option", "-g", "remain-on-exit", "on")  # keep the screen readable after an exit

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True,
                              timeout=10).stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def type_line(self, text: str) -> None:
        self.tmux("send-keys", "-l", text)
        self.keys("Enter")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-300")

    def wait_for(self, text: str, timeout: float = 20.0, *, count: int = 1) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} (x{count}) not on the screen after {timeout}s:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


def launch(server: ChatServer, tmp_path: Path, *args: str) -> Pane:
    """``codeloop run ARGS`` on the workspace ``tmp_path/ws`` in a fresh terminal; the pane
    stays open after it exits, showing ``EXITED=<code>``."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    env = isolated_env(workspace, TERM="xterm")
    command = " ".join(shlex.quote(a) for a in [
        "env", "-i", *(f"{k}={v}" for k, v in env.items()), CODELOOP, "run", *args, "--cwd", str(workspace),
        "--base-url", server.base_url, "--profile", "anthropic", "--sandbox", "off"])
    return Pane(f"codeloop-test-{tmp_path.name}", f"{command}; echo EXITED=$?; sleep 600")


@pytest.fixture
def chat(server: ChatServer, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Pane]:
    approval = getattr(request, "param", "never-ask")
    pane = launch(server, tmp_path, "--approval", approval)
    try:
        pane.wait_for("Ctrl-C aborts")
        yield pane
    finally:
        pane.close()


def sent(server: ChatServer, index: int) -> str:
    return json.dumps(server.requests[index]["messages"])


def test_chat_streams_answers_joins_continued_lines_and_steers(chat: Pane, server: ChatServer) -> None:
    server.replies.extend([
        text_reply("Hello from the scripted model."),
        tool_reply("shell", {"command": "sleep 1.5"}),
        text_reply("Steered answer."),
        text_reply("Follow-up answer."),
    ])
    chat.type_line("say hello")
    chat.wait_for("Hello from the scripted model.")
    chat.type_line("run a short \\")
    chat.type_line("command please")
    chat.wait_for("sleep 1.5")
    chat.type_line("use tabs please")
    chat.type_line(">> then list the files")
    chat.wait_for("Follow-up answer.")
    assert "say hello" in sent(server, 1) and "Hello from the scripted model." in sent(server, 1)
    assert '"run a short \\ncommand please"' in sent(server, 1)
    assert "use tabs please" in sent(server, 2)
    assert server.requests[3]["messages"][-1] == {"role": "user", "content": "then list the files"}
    chat.wait_for("›", count=3)  # the turn is over: typed earlier, /exit would steer it (seen under load)
    chat.type_line("/exit")
    chat.wait_for("EXITED=0")
    assert "codeloop run --resume" in chat.screen()


def test_ctrl_c_aborts_the_turn_kills_the_command_and_twice_quits(chat: Pane, server: ChatServer,
                                                                  tmp_path: Path) -> None:
    marker = tmp_path / "ws" / "late.txt"
    server.replies.extend([tool_reply("shell", {"command": "sleep 41.5 && touch late.txt"}), text_reply("Still here.")])
    chat.type_line("start something long")
    chat.wait_for("sleep 41.5")
    # The call is shown before its process is spawned; on a loaded machine that takes a moment.
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-f", "sleep 41.5"], capture_output=True).returncode != 0:
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.1)
    chat.keys("C-c")
    chat.wait_for("aborting the turn")
    chat.wait_for("›", count=2)  # the prompt is back
    deadline = time.monotonic() + 5
    while subprocess.run(["pgrep", "-f", "sleep 41.5"], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "the aborted command is still running"
        time.sleep(0.1)
    chat.type_line("are you there?")
    chat.wait_for("Still here.")
    assert "start something long" in sent(server, 1)  # the conversation survives the abort
    chat.keys("C-c")
    chat.wait_for("(Ctrl-C again to quit)", count=2)
    chat.keys("C-c")
    chat.wait_for("EXITED=0")
    assert not marker.exists()


@pytest.mark.parametrize("chat", ["on-risk"], indirect=True)
def test_on_risk_asks_on_the_terminal_and_always_is_remembered(chat: Pane, server: ChatServer,
                                                                tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    server.replies.extend([tool_reply("shell", {"command": "touch one.txt"}), text_reply("made one"),
                           tool_reply("shell", {"command": "touch two.txt"}), text_reply("made two"),
                           tool_reply("shell", {"command": "rm one.txt"}), text_reply("not removed")])
    chat.type_line("make one")
    chat.wait_for("Approve?")
    assert "touch one.txt" in chat.screen() and not (workspace / "one.txt").exists()
    chat.type_line("always")
    chat.wait_for("made one")
    assert (workspace / "one.txt").exists()
    assert "touch" in (workspace / ".codeloop" / "approvals.toml").read_text()
    chat.type_line("make two")  # remembered prefix: no question
    chat.wait_for("made two")
    assert (workspace / "two.txt").exists() and chat.screen().count("Approve?") == 1
    chat.type_line("remove one")
    chat.wait_for("Approve?", count=2)
    chat.type_line("n")
    chat.wait_for("not removed")
    assert (workspace / "one.txt").exists()
    assert "the user declined" in sent(server, 5)


def test_task_mode_on_a_terminal_asks_and_yes_runs_the_command(server: ChatServer, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    server.replies.extend([tool_reply("shell", {"command": "touch yes.txt"}), text_reply("made it")])
    pane = launch(server, tmp_path, "make yes.txt")
    try:
        pane.wait_for("Approve?")
        assert not (workspace / "yes.txt").exists()
        pane.type_line("y")
        pane.wait_for("EXITED=0")
        assert (workspace / "yes.txt").exists() and "made it" in pane.screen()
        assert not (workspace / ".codeloop" / "approvals.toml").exists()  # "y" is not remembered
    finally:
        pane.close()


def test_status_line_shows_progress_while_a_turn_runs_and_edits_show_their_diff(chat: Pane, server: ChatServer,
                                                                                 tmp_path: Path) -> None:
    (tmp_path / "ws" / "app.py").write_text("x = 1\ny = 2\n")
    server.replies.extend([
        tool_reply("edit_file", {"file_path": "app.py", "old_string": "y = 2", "new_string": "y = 20"}),
        tool_reply("shell", {"command": "sleep 3.5"}, call_id="call_2"),
        text_reply("All done."),
    ])
    chat.type_line("change y, then wait")
    screen = chat.wait_for("running shell")
    status = next(line for line in screen.splitlines() if "running shell" in line)
    # Two model calls so far (10 tokens in and 5 out each, from the scripted server).
    assert "turn 2" in status and "in 20 (cached 0) / out 10" in status, status
    assert "-y = 2" in screen and "+y = 20" in screen  # the edit's diff under its call
    chat.wait_for("All done.")
    screen = chat.wait_for("3 model calls · tokens in 30 (cached 0) / out 15")
    assert "running shell" not in screen and "waiting for the model" not in screen  # the line is gone
    assert (tmp_path / "ws" / "app.py").read_text() == "x = 1\ny = 20\n"
