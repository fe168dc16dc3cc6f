"""``codeloop run`` cannot make the host run a program it planted (issue 32), end to end:
the real command, real bubblewrap and git, a scripted model on a loopback server that does
what a model misled by a file it read would do, then the host's own git commands with a
marker file outside the workspace proving whether a planted program ran."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from chat_server import ChatServer, text_reply, tool_reply
from test_run_cli import CODELOOP, isolated_env

from codeloop.environments.sandbox import probe_bwrap

if probe_bwrap() is not None:  # pragma: no cover - depends on the host
    pytest.fail(f"bubblewrap must work for these tests: {probe_bwrap()} (run scripts/system-deps)")

IDENTITY = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.com", "GIT_COMMITTER_NAME": "ci",
            "GIT_COMMITTER_EMAIL": "ci@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **IDENTITY, "HOME": str(cwd.parent / "home")}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 or not check, f"git {' '.join(args)}: {done.stdout}{done.stderr}"
    return done


@pytest.fixture
def checkout(workspace: Path) -> Path:
    """What ``actions/checkout`` leaves: a repository with one commit."""
    (workspace.parent / "home").mkdir()
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "app.py").write_text("print('hi')\n")
    git(workspace, "add", "app.py")
    git(workspace, "commit", "-qm", "first")
    return workspace


def plant(marker: Path) -> str:
    """The shell line of a misled model: every way to plant code git runs, then real work."""
    hook = f"printf '#!/bin/sh\\ntouch {marker}\\n'"
    return (f'git config core.fsmonitor "touch {marker}; false"; '
            f"{hook} > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
            f"git init -q sub && git -C sub config core.fsmonitor 'touch {marker}; false'; "
            "echo \"print('hello')\" > app.py")


def run_ci(server: ChatServer, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """The "Run the agent" step of docs/cli.md's GitHub Actions job, as written (plus the
    scripted model's address)."""
    temp = cwd.parent
    env = {**isolated_env(cwd, TASK="tidy app.py", HOME=str(temp / "home"), **IDENTITY),
           "CODELOOP_STATE_DIR": str(temp / "codeloop-state")}
    with (temp / "events.jsonl").open("w") as events:
        return subprocess.run(
            [CODELOOP, "run", env["TASK"], "--json", "--approval", "never-ask", "--max-turns", "60",
             "--output-last-message", str(temp / "answer.md"), "--base-url", server.base_url, "--profile",
             "anthropic", *extra],
            cwd=cwd, env=env, stdout=events, stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL)


def tool_results(cwd: Path) -> list[dict[str, object]]:
    lines = (cwd.parent / "events.jsonl").read_text().splitlines()
    return [e["data"] for e in map(json.loads, lines) if e["kind"] == "tool_call_end"]


def test_the_docs_ci_example_is_safe_as_written(server: ChatServer, checkout: Path) -> None:
    marker = checkout.parent / "PLANTED-CODE-RAN"
    server.replies.extend([tool_reply("shell", {"command": plant(marker)}), text_reply("Tidied app.py.")])
    done = run_ci(server, checkout)
    assert done.returncode == 0, done.stderr
    assert (checkout.parent / "answer.md").read_text() == "Tidied app.py."
    # The job's last step, then what a following create-pull-request step does.
    diff = git(checkout, "diff", "--stat")
    assert "app.py" in diff.stdout  # the agent's real work is there
    git(checkout, "status")
    git(checkout, "-C", "sub", "status", check=False)
    git(checkout, "checkout", "-q", "-b", "codeloop-changes")
    git(checkout, "commit", "-qam", "codeloop changes")
    assert not marker.exists(), "a program planted in the sandbox ran on the host"
    output = str(tool_results(checkout)[0]["output"]) + str(tool_results(checkout)[0]["error"])
    assert "moved sub/.git aside" in output  # the model is told, so is the log


def test_without_a_sandbox_never_ask_refuses_writes_to_what_the_host_runs(server: ChatServer, checkout: Path) -> None:
    marker = checkout.parent / "PLANTED-CODE-RAN"
    server.replies.extend([
        tool_reply("write_file", {"file_path": ".git/hooks/pre-commit", "content": f"#!/bin/sh\ntouch {marker}\n"}),
        tool_reply("shell", {"command": f'git config core.fsmonitor "touch {marker}; false"'}, "call_2"),
        tool_reply("write_file", {"file_path": ".vscode/tasks.json", "content": "{}"}, "call_3"),
        tool_reply("shell", {"command": "echo 'export X=1' > .envrc"}, "call_4"),
        tool_reply("write_file", {"file_path": "notes.txt", "content": "ok\n"}, "call_5"),
        text_reply("done"),
    ])
    done = run_ci(server, checkout, "--sandbox", "off")
    assert done.returncode == 0, done.stderr
    results = tool_results(checkout)
    assert [r["error"] is not None for r in results] == [True, True, True, True, False], results
    assert all("no sandbox protects them" in str(r["error"]) for r in results[:4])
    assert not (checkout / ".git" / "hooks" / "pre-commit").exists()
    assert not (checkout / ".vscode").exists() and not (checkout / ".envrc").exists()
    assert (checkout / "notes.txt").read_text() == "ok\n"
    git(checkout, "status")
    git(checkout, "commit", "-q", "--allow-empty", "-m", "x")
    assert not marker.exists()


def test_without_a_sandbox_on_risk_asks_before_writing_what_the_host_runs(server: ChatServer, checkout: Path) -> None:
    """on-risk runs file tools without asking, but not on .git: with no terminal to ask,
    the call is refused and the exit code says a call needed approval."""
    server.replies.extend([
        tool_reply("edit_file", {"file_path": ".git/config", "old_string": "[core]",
                                 "new_string": "[core]\n\tfsmonitor = touch /tmp/x"}),
        text_reply("done"),
    ])
    temp = checkout.parent
    done = subprocess.run([CODELOOP, "run", "go", "--json", "--sandbox", "off", "--base-url", server.base_url,
                           "--profile", "anthropic", "--cwd", str(checkout)], capture_output=True, text=True,
                          env=isolated_env(checkout, HOME=str(temp / "home")), timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 4, done.stderr
    assert "fsmonitor" not in (checkout / ".git" / "config").read_text()


def test_sandbox_full_is_the_deprecated_name_of_off(tmp_path: Path) -> None:
    done = subprocess.run([CODELOOP, "tool", "shell", "--args", json.dumps({"command": "echo ran > ran.txt"}),
                           "--cwd", str(tmp_path), "--sandbox", "full", "--approval", "never-ask"],
                          capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "--sandbox full is deprecated: it means NO sandbox" in done.stderr and "--sandbox off" in done.stderr
    assert (tmp_path / "ran.txt").read_text() == "ran\n"
    helped = subprocess.run([CODELOOP, "run", "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert "off (no sandbox" in " ".join(helped.stdout.split())
