"""Undo that covers shell commands (issue 35), end to end: the real ``codeloop run`` against the
loopback chat server runs shell commands that edit, delete (an ignored ``.env`` among them),
make directories, move, chmod, link and build; ``codeloop rewind --to 0`` brings back every
byte, mode and symlink — in a plain directory and in a git repository whose ``.git`` stays
byte-identical — and ``codeloop redo`` brings the session's changes back."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from chat_server import text_reply, tool_reply
from test_run_cli import CODELOOP, isolated_env, run
from test_run_sessions_cli import BASE, session_id

SCRIPT = [
    "sed -i 's/alpha/omega/' src/app.py && rm .env notes.txt",
    "mkdir -p build/obj && printf 'obj' > build/obj/app.o && mv src/app.py src/main.py",
    "chmod 700 run.sh && chmod 600 data.bin && ln -s src/main.py current && rm link && ln -s data.bin link",
]


def state_of(root: Path) -> dict[str, tuple[str, object]]:
    out: dict[str, tuple[str, object]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("file", (stat.S_IMODE(st.st_mode), path.read_bytes()))
    return out


def populate(ws: Path, as_repo: bool) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_bytes(b"name = 'alpha'\r\n")
    (ws / ".gitignore").write_text(".env\nbuild/\n")
    (ws / ".gitattributes").write_text("* text=auto\n")
    (ws / ".env").write_text("TOKEN=secret\n")
    (ws / "notes.txt").write_text("tracked notes\n")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    (ws / "run.sh").chmod(0o755)
    (ws / "data.bin").write_bytes(bytes(range(256)))
    (ws / "link").symlink_to("notes.txt")
    if as_repo:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x", GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x")
        subprocess.run(["bash", "-ec", "git init -q && git add -A && git commit -qm one && echo wip >> notes.txt "
                        "&& git stash -q && git tag v1"], cwd=ws, check=True, env=env, capture_output=True)


def codeloop(*args: str, ws: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CODELOOP, *args], capture_output=True, text=True, timeout=60, env=isolated_env(ws),
                          cwd=ws)


def session(server, ws: Path) -> str:
    server.replies.extend([tool_reply("shell", {"command": line}, f"call_{n}") for n, line in enumerate(SCRIPT)])
    server.replies.append(text_reply("done"))
    done = run(["rework the app", "--base-url", server.base_url, *BASE], ws)
    assert done.returncode == 0, done.stderr
    return session_id(done.stderr)


@pytest.mark.parametrize("as_repo", [False, True], ids=["plain-dir", "git-repo"])
def test_rewind_to_0_undoes_every_shell_change_and_redo_brings_them_back(server, workspace, as_repo) -> None:
    populate(workspace, as_repo)
    before = state_of(workspace)
    sid = session(server, workspace)
    after = state_of(workspace)
    assert not (workspace / ".env").exists() and (workspace / "current").is_symlink()

    preview = codeloop("rewind", sid, "--to", "0", "--dry-run", "--json", ws=workspace)
    assert preview.returncode == 0, preview.stderr
    planned = json.loads(preview.stdout)
    assert planned["dry_run"] is True and state_of(workspace) == after
    assert {(c["path"], c["action"]) for c in planned["changes"]} >= {
        (".env", "create"), ("notes.txt", "create"), ("src/app.py", "create"), ("src/main.py", "delete"),
        ("build/obj/app.o", "delete"), ("current", "delete"), ("link", "modify"), ("run.sh", "mode"),
        ("data.bin", "mode")}

    back = codeloop("rewind", sid, "--to", "0", ws=workspace)
    assert back.returncode == 0, back.stderr
    assert "create .env" in back.stdout and "Traceback" not in back.stderr
    assert state_of(workspace) == before  # .git included: HEAD, index, stash, refs, hooks untouched

    again = codeloop("redo", sid, ws=workspace)
    assert again.returncode == 0, again.stderr
    assert state_of(workspace) == after


def test_checkpoint_events_undo_and_refusal_of_outside_changes(server, workspace) -> None:
    populate(workspace, False)
    server.replies.extend([tool_reply("shell", {"command": SCRIPT[0]}, "c1"), text_reply("one"),
                           tool_reply("shell", {"command": "echo new > made.txt"}, "c2"), text_reply("two")])
    first = run(["step one", "--json", "--base-url", server.base_url, *BASE], workspace)
    assert first.returncode == 0, first.stderr
    events = [json.loads(line) for line in first.stdout.splitlines()]
    [checkpoint] = [e["data"] for e in events if e["kind"] == "checkpoint"]
    assert checkpoint["tool_name"] == "shell" and checkpoint["step"] == 1
    assert sorted(checkpoint["paths"]) == [".env", "notes.txt", "src/app.py"]
    sid = events[0]["session_id"]
    second = run(["step two", "--resume", sid, "--base-url", server.base_url, *BASE], workspace)
    assert second.returncode == 0, second.stderr

    (workspace / "src" / "app.py").write_text("edited by the user\n")
    refused = codeloop("undo", ws=workspace)
    assert refused.returncode == 1 and "src/app.py" in refused.stderr and "--force" in refused.stderr
    assert (workspace / "made.txt").exists()  # nothing was changed

    (workspace / "src" / "app.py").write_bytes(b"name = 'omega'\r\n")  # as the session left it
    undone = codeloop("undo", ws=workspace)  # the last turn that changed files: made.txt goes
    assert undone.returncode == 0, undone.stderr
    assert not (workspace / "made.txt").exists() and not (workspace / ".env").exists()
    (workspace / "stray.txt").write_text("user")
    refused = codeloop("rewind", sid, "--to", "0", ws=workspace)
    assert refused.returncode == 1 and "stray.txt" in refused.stderr and not (workspace / ".env").exists()
    forced = codeloop("rewind", sid, "--to", "0", "--force", "--json", ws=workspace)
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["outside"] == ["stray.txt"]
    assert (workspace / ".env").read_text() == "TOKEN=secret\n" and not (workspace / "stray.txt").exists()


def test_undo_and_redo_in_a_chat_take_back_a_shell_change_and_the_conversation_goes_on(server, workspace) -> None:
    populate(workspace, False)
    server.replies.extend([tool_reply("shell", {"command": "rm .env && echo built > out.o"}, "c1"),
                           text_reply("cleaned"), text_reply("after undo"), text_reply("after redo")])
    done = subprocess.run([CODELOOP, "run", "--cwd", str(workspace), "--base-url", server.base_url, *BASE],
                          input="clean up\n/undo\nwhat now?\n/undo\n/redo\nand now?\n/exit\n",
                          capture_output=True, text=True, env=isolated_env(workspace), timeout=60)
    assert done.returncode == 0, done.stderr
    assert "undone: the conversation now ends with turn 0" in done.stderr, done.stderr
    # The second /undo took back the turn of "what now?" (no file changed: the conversation
    # only); /redo brought it back; the model saw the conversation as it was after each.
    assert (workspace / ".env").read_text() == "TOKEN=secret\n" and not (workspace / "out.o").exists()
    sent_after_undo = json.dumps(server.requests[2]["messages"])
    assert "what now?" in sent_after_undo and "clean up" not in sent_after_undo
    sent_after_redo = json.dumps(server.requests[3]["messages"])
    assert "what now?" in sent_after_redo and "and now?" in sent_after_redo


def test_snapshots_config_names_what_is_left_out_and_a_rewind_leaves_it_alone(server, workspace) -> None:
    (workspace.parent / "userconf").mkdir()
    (workspace.parent / "userconf" / "config.toml").write_text(
        '[snapshots]\nexclude_dirs = ["cache"]\nmax_file_mb = 1\n')
    (workspace / "cache").mkdir()
    (workspace / "cache" / "c.bin").write_text("cached")
    (workspace / "big.bin").write_bytes(b"x" * (2 << 20))
    (workspace / "a.txt").write_text("a")
    server.replies.extend([tool_reply("shell", {"command": "rm a.txt cache/c.bin && echo n > n.txt"}, "c1"),
                           text_reply("done")])
    done = run(["go", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 0, done.stderr
    back = codeloop("rewind", session_id(done.stderr), "--to", "0", "--json", ws=workspace)
    assert back.returncode == 0, back.stderr
    result = json.loads(back.stdout)
    assert {(c["path"], c["action"]) for c in result["changes"]} == {("a.txt", "create"), ("n.txt", "delete")}
    assert {n["path"]: n["reason"] for n in result["not_covered"]} == {
        "big.bin": "larger than 1048576 bytes", "cache": "excluded directory"}
    assert (workspace / "a.txt").read_text() == "a" and not (workspace / "cache" / "c.bin").exists()
    assert (workspace / "big.bin").stat().st_size == 2 << 20


def test_a_bad_snapshots_table_is_a_one_line_error(server, workspace) -> None:
    (workspace / ".codeloop").mkdir()
    (workspace / ".codeloop" / "config.toml").write_text('[snapshots]\nexclude_dirs = ["a/b"]\n')
    done = run(["go", "--base-url", server.base_url, *BASE], workspace)
    assert done.returncode == 2 and "config.toml:2: exclude_dirs must be a list of directory names" in done.stderr
    assert "Traceback" not in done.stderr
