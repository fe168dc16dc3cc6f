"""Issue 32, end to end through the real ``codeloop`` command: what codeloop reads on its own
(project config, approvals, command files, ``@file`` includes) is a regular file inside the
repository of bounded size, never a FIFO, a device or a link out; trust is keyed on the file
itself, so a link cannot borrow another repository's trust; and every tool read is bounded
before it reads (a 3 GB sparse file, read under a 1.5 GB address-space limit, so a read that
tries to take it whole fails with MemoryError instead of slowing the machine down)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest
from chat_server import ChatServer, text_reply
from test_run_cli import CODELOOP, isolated_env, run

NATIVE = ["--profile", "anthropic", "--approval", "never-ask", "--sandbox", "full"]
HOOKED = '[[hooks]]\nevent = "session_start"\ncommand = "touch hooked"\n'
SPARSE_BYTES = 3 * 1024**3
ADDRESS_SPACE = 1536 * 1024**2
"""The address-space limit of the ``codeloop tool`` runs: far above what codeloop needs,
far below the sparse file, so reading it whole is a MemoryError, never a swapping host."""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _cli(args: list[str], env: dict[str, str], *, timeout: float = 30, limit: bool = False,
         stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``codeloop ARGS``; a hang (a FIFO read) ends in TimeoutExpired, failing the test."""
    return subprocess.run([CODELOOP, *args], capture_output=True, text=True, env=env, timeout=timeout,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          preexec_fn=_limited if limit else None)


def _one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and all(w in errors[0] for w in words), done.stderr


# -- files codeloop reads on its own ------------------------------------------------------------


def test_a_fifo_as_the_project_config_is_refused_at_once_by_run_and_trust(server: ChatServer,
                                                                          workspace: Path) -> None:
    (workspace / ".codeloop").mkdir()
    os.mkfifo(workspace / ".codeloop" / "config.toml")
    env = isolated_env(workspace)
    _one_line_error(run(["hi", "--base-url", server.base_url, *NATIVE], workspace, env),
                    "config.toml", "FIFO", "not a regular file")
    _one_line_error(_cli(["trust", str(workspace), "--yes"], env), "config.toml", "FIFO")
    assert server.requests == []


def test_a_project_config_linked_to_dev_zero_is_refused_without_reading(server: ChatServer,
                                                                        workspace: Path) -> None:
    (workspace / ".codeloop").mkdir()
    (workspace / ".codeloop" / "config.toml").symlink_to("/dev/zero")
    env = isolated_env(workspace)
    # codeloop run reads the config through the same open (its FIFO case is above).
    _one_line_error(_cli(["trust", str(workspace), "--yes"], env, limit=True), "config.toml", "outside the repository")
    # Inside the repository, a link to a device is still no regular file.
    (workspace / "dev").symlink_to("/dev")
    (workspace / ".codeloop" / "config.toml").unlink()
    (workspace / ".codeloop" / "approvals.toml").symlink_to("../dev/zero")
    _one_line_error(_cli(["trust", str(workspace), "--yes"], env, limit=True), "approvals.toml")


def test_a_command_file_linking_out_of_the_repository_sends_nothing_to_the_model(server: ChatServer,
                                                                                 workspace: Path) -> None:
    secret = workspace.parent / "host-secret.md"
    secret.write_text("HOST-ONLY-SECRET: id_rsa contents\n")
    commands = workspace / ".codeloop" / "commands"
    commands.mkdir(parents=True)
    (commands / "leak.md").symlink_to(secret)
    server.replies.append(text_reply("ok"))
    done = run(["/leak", "--base-url", server.base_url, *NATIVE], workspace)
    _one_line_error(done, "leak.md", "outside the repository")
    assert server.requests == [] and "HOST-ONLY-SECRET" not in json.dumps(server.requests)
    # A link that lies inside the repository and points inside it is an ordinary command.
    (commands / "leak.md").unlink()
    (workspace / "prompts").mkdir()
    (workspace / "prompts" / "review.md").write_text("Review the code.\n")
    (commands / "review.md").symlink_to("../../prompts/review.md")
    assert run(["/review", "--base-url", server.base_url, *NATIVE], workspace).returncode == 0
    assert server.requests[0]["messages"][-1]["content"] == "Review the code."


def test_an_at_include_that_is_a_fifo_is_an_error_not_a_hang(server: ChatServer, workspace: Path) -> None:
    commands = workspace / ".codeloop" / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text("Explain @pipe.txt\n")
    os.mkfifo(workspace / "pipe.txt")
    _one_line_error(run(["/explain", "--base-url", server.base_url, *NATIVE], workspace), "@pipe.txt", "FIFO")
    assert server.requests == []


# -- trust is keyed on the file itself -----------------------------------------------------------


def test_a_config_linked_to_a_trusted_repositorys_config_borrows_no_trust(server: ChatServer,
                                                                           tmp_path: Path) -> None:
    trusted, other = tmp_path / "trusted", tmp_path / "ws"
    for repo in (trusted, other):
        (repo / ".codeloop").mkdir(parents=True)
    (trusted / ".codeloop" / "config.toml").write_text(HOOKED)
    env = isolated_env(other)
    done = _cli(["trust", str(trusted), "--yes"], env)
    assert done.returncode == 0, done.stderr
    (other / ".codeloop" / "config.toml").symlink_to(trusted / ".codeloop" / "config.toml")
    _one_line_error(run(["hi", "--base-url", server.base_url, *NATIVE], other, env), "outside the repository")
    assert not (other / "hooked").exists() and server.requests == []
    # The trusted repository itself keeps its trust: its hook runs there.
    server.replies.append(text_reply("ok"))
    assert run(["hi", "--base-url", server.base_url, *NATIVE], trusted, env).returncode == 0
    assert (trusted / "hooked").exists()


def test_a_repository_holding_a_trusted_one_cannot_link_to_its_config(server: ChatServer, tmp_path: Path) -> None:
    outer = tmp_path / "ws"
    inner = outer / "vendor" / "app"
    (inner / ".codeloop").mkdir(parents=True)
    (outer / ".codeloop").mkdir()
    (inner / ".codeloop" / "config.toml").write_text(HOOKED)
    env = isolated_env(outer)
    assert _cli(["trust", str(inner), "--yes"], env).returncode == 0
    # The link lies in the outer repository, not in the trusted one: the outer file is untrusted.
    (outer / ".codeloop" / "config.toml").symlink_to("../vendor/app/.codeloop/config.toml")
    server.replies.append(text_reply("ok"))
    done = run(["hi", "--base-url", server.base_url, *NATIVE], outer, env)
    assert done.returncode == 0, done.stderr
    assert "ignored hooks until you trust this file" in done.stderr and not (outer / "hooked").exists()


def test_trust_records_each_file_by_path_and_content_hash(workspace: Path) -> None:
    import hashlib

    (workspace / ".codeloop").mkdir()
    config = workspace / ".codeloop" / "config.toml"
    config.write_text(HOOKED)
    env = isolated_env(workspace)
    done = _cli(["trust", str(workspace), "--yes"], env)
    assert done.returncode == 0, done.stderr
    digest = hashlib.sha256(config.read_bytes()).hexdigest()
    assert f"trusted {config} (sha256 {digest})" in done.stdout
    record = json.loads((workspace.parent / "userconf" / "trusted.json").read_text())
    assert record["files"] == {str(config): digest}


# -- every tool read is bounded before it reads -------------------------------------------------


@pytest.mark.parametrize(("tool", "args"), [
    ("read_file", {"file_path": "big.bin"}),
    ("edit_file", {"file_path": "big.bin", "old_string": "a", "new_string": "b"}),
    ("read_many_files", {"paths": ["big.bin"]}),
])
def test_a_3_gb_sparse_file_is_a_clear_refusal_of_every_read_tool(workspace: Path, tool: str,
                                                                   args: dict[str, object]) -> None:
    with open(workspace / "big.bin", "wb") as f:
        f.truncate(SPARSE_BYTES)
    done = _cli(["tool", tool, "--args", json.dumps(args), "--cwd", str(workspace)], isolated_env(workspace),
                limit=True, timeout=60)
    out = done.stdout + done.stderr
    assert "MemoryError" not in out and "Traceback" not in out, out
    assert f"'big.bin' is {SPARSE_BYTES} bytes (3.0 GB), over the" in out and "sed -n" in out, out
    assert os.path.getsize(workspace / "big.bin") == SPARSE_BYTES  # and nothing was written


def test_a_write_over_a_fifo_is_refused_instead_of_hanging(server: ChatServer, workspace: Path) -> None:
    # The session's snapshots (issue 35) pass a FIFO by without opening it; the write is then
    # refused by write_file itself (nothing can have read the pipe: reads refuse FIFOs), and
    # the pipe is still a pipe. Before issue 35 the per-file checkpoint refused it first.
    from chat_server import tool_reply

    os.mkfifo(workspace / "pipe")
    server.replies.extend([tool_reply("write_file", {"file_path": "pipe", "content": "x\n"}), text_reply("ok")])
    done = run(["write it", "--base-url", server.base_url, *NATIVE], workspace)
    assert done.returncode == 0, done.stderr
    result = str(next(m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"))
    assert result.startswith("Error: pipe") and (workspace / "pipe").is_fifo(), result
