"""Nothing a sandboxed command writes makes the host run a program (issue 32).

Real bubblewrap, real git. Each attack runs as a command in ``workspace-write`` (as a model
misled by a file it read would run it); afterwards the host runs ``git status``,
``git checkout`` and ``git commit`` (in the workspace and in the repositories the attack
made) and a marker file outside the workspace proves whether a planted program ran. The
controls show that ordinary git work still works inside the sandbox.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.environments.errors import WriteDeniedError
from codeloop.environments.runner import Job
from codeloop.environments.sandbox import SandboxedExecutionEnvironment, probe_bwrap

if probe_bwrap() is not None:  # pragma: no cover - depends on the host
    pytest.fail(f"bubblewrap must work for these tests: {probe_bwrap()} (run scripts/system-deps)")

IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com"}


@pytest.fixture
def host_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The host's git: no system or user configuration but what a test sets."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", **IDENTITY,
           "GIT_ALLOW_PROTOCOL": "file"}
    for key, value in env.items():  # the sandboxed commands inherit them too
        monkeypatch.setenv(key, value)
    return env


def git(cwd: Path, *args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)
    if check:
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stdout}{done.stderr}"
    return done


@pytest.fixture
def repo(tmp_path: Path, host_env: dict[str, str]) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main", env=host_env)
    (ws / "a.txt").write_text("a\n")
    git(ws, "add", "a.txt", env=host_env)
    git(ws, "commit", "-qm", "first", env=host_env)
    return ws


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "PLANTED-CODE-RAN"


async def sandboxed(ws: Path, *commands: str) -> list[str]:
    """Run each command in workspace-write; their outputs."""
    env = SandboxedExecutionEnvironment(ws, mode="workspace-write")
    await env.initialize()
    outputs = []
    try:
        for command in commands:
            outputs.append((await env.exec_command(command, timeout_ms=60_000)).output)
    finally:
        await env.cleanup()
    return outputs


def host_git_work(cwd: Path, env: dict[str, str], *, must_work: bool = True) -> None:
    """What a user does next on the host: status, checkout, commit."""
    for args in (("status",), ("diff",), ("checkout", "-q", "-b", "after-session"),
                 ("commit", "-q", "--allow-empty", "-m", "after the session"), ("checkout", "-q", "-")):
        git(cwd, *args, env=env, check=must_work)


def hook(marker: Path) -> str:
    return f"printf '#!/bin/sh\\ntouch {marker}\\n'"


ATTACKS = {
    "fsmonitor in .git/config": 'git config core.fsmonitor "touch {m}; false"',
    "hooks in .git/hooks": "{hook} > .git/hooks/pre-commit; {hook} > .git/hooks/post-checkout; "
                           "chmod +x .git/hooks/pre-commit .git/hooks/post-checkout",
    "hooksPath into the tree": 'git config core.hooksPath planted; mkdir -p planted; {hook} > planted/pre-commit; '
                               "chmod +x planted/pre-commit",
    "rebuilt .git": 'mv .git .gitx; mkdir -p .git; cp -r .gitx/. .git/ 2>/dev/null; '
                    'git config core.fsmonitor "touch {m}; false"; mv .gitx .git 2>/dev/null; true',
    "emptied and refilled .git": 'cp -r .git /tmp/copy; rm -rf .git; cp -r /tmp/copy/. .git/; '
                                 'git --git-dir=.git config core.fsmonitor "touch {m}; false"; '
                                 "{hook} > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; true",
    "commondir to a planted config": 'mkdir evil && cp -r .git/. evil/ && '
                                     'git config --file evil/config core.fsmonitor "touch {m}; false" && '
                                     "echo ../evil > .git/commondir",
    "include of a planted file": 'printf "[core]\\n\\tfsmonitor = touch {m}; false\\n" > inc.cfg; '
                                 "git config include.path ../inc.cfg",
    "config.worktree": 'git config extensions.worktreeConfig true; '
                       'printf "[core]\\n\\tfsmonitor = touch {m}; false\\n" > .git/config.worktree',
}


@pytest.mark.parametrize("attack", ATTACKS)
async def test_what_a_command_plants_in_the_checkout_never_runs_on_the_host(
        repo: Path, marker: Path, host_env: dict[str, str], attack: str) -> None:
    await sandboxed(repo, ATTACKS[attack].format(m=marker, hook=hook(marker)))
    host_git_work(repo, host_env)
    assert not marker.exists(), f"{attack}: a program planted by a sandboxed command ran on the host"
    assert git(repo, "rev-list", "--all", "--count", env=host_env).stdout.strip() == "2"


async def test_a_repository_made_in_the_session_gets_no_program_and_is_moved_aside(
        repo: Path, marker: Path, host_env: dict[str, str]) -> None:
    outputs = await sandboxed(
        repo,
        f'git init -q sub && git -C sub commit -q --allow-empty -m x && git -C sub config core.fsmonitor "touch {marker}"',
        f"git init -q --separate-git-dir gitdir2 sub2 && {hook(marker)} > gitdir2/hooks/post-checkout && "
        "chmod +x gitdir2/hooks/post-checkout",
        f'git init -q --bare bare.git && git --git-dir=bare.git config core.sshCommand "touch {marker}"',
    )
    assert "moved sub/.git aside to sub/.git.codeloop-quarantined" in outputs[0]
    assert "core.fsmonitor" in outputs[0]
    assert "moved gitdir2 aside" in outputs[1] and "post-checkout" in outputs[1]
    assert "moved bare.git aside" in outputs[2] and "core.sshcommand" in outputs[2]
    for sub in ("sub", "sub2"):
        for args in (("status",), ("checkout", "-q", "-b", "x"), ("commit", "-q", "--allow-empty", "-m", "y")):
            git(repo / sub, *args, env=host_env, check=False)
    host_git_work(repo, host_env)
    assert not marker.exists()
    assert (repo / "sub" / ".git.codeloop-quarantined" / "config").exists()  # kept for the user to look at


async def test_a_new_repository_without_programs_is_kept(repo: Path, host_env: dict[str, str]) -> None:
    outputs = await sandboxed(repo, "git init -q sub && cd sub && git config user.name me && "
                                    "git remote add origin https://example.com/x.git && echo s > s && "
                                    "git add s && git commit -qm s && git worktree add -q ../wt2 -b side")
    assert "codeloop:" not in outputs[0], outputs[0]
    assert git(repo / "sub", "log", "--oneline", env=host_env).stdout.count("\n") == 1
    assert git(repo / "wt2", "status", "--short", env=host_env).stdout == ""


async def test_a_submodules_repository_cannot_be_changed_or_replaced(
        tmp_path: Path, repo: Path, marker: Path, host_env: dict[str, str]) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main", env=host_env)
    git(lib, "commit", "-q", "--allow-empty", "-m", "lib", env=host_env)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib", env=host_env)
    git(repo, "commit", "-qm", "lib", env=host_env)
    await sandboxed(
        repo,
        f'git -C lib config core.fsmonitor "touch {marker}; false"',
        f"{hook(marker)} > .git/modules/lib/hooks/post-checkout; chmod +x .git/modules/lib/hooks/post-checkout",
        f"mv .git/modules/lib .git/modules/old; mv .git/modules .git/m2; mkdir -p .git/modules/lib; "
        f'git --git-dir=.git/modules/lib config core.fsmonitor "touch {marker}; false"',
        f"mkdir -p .git/modules/lib2 && cp -r .git/modules/lib/. .git/modules/lib2/ && "
        f'git --git-dir=.git/modules/lib2 config core.fsmonitor "touch {marker}; false" && '
        "mkdir lib2 && echo 'gitdir: ../.git/modules/lib2' > lib2/.git",
    )
    for where in (repo / "lib", repo / "lib2"):
        if not where.is_dir():
            continue
        git(where, "status", env=host_env, check=False)
        git(where, "checkout", "-q", "-b", "y", env=host_env, check=False)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "update", "--init", env=host_env, check=False)
    host_git_work(repo, host_env)
    host_git_work(repo / "lib", host_env)
    assert not marker.exists()


async def test_a_hooks_directory_the_user_configured_in_the_tree_is_read_only(
        repo: Path, marker: Path, host_env: dict[str, str]) -> None:
    """``core.hooksPath = .githooks`` in the user's own configuration (husky-like setups)."""
    git(repo, "config", "--global", "core.hooksPath", ".githooks", env=host_env)
    (repo / ".githooks").mkdir()
    (repo / ".githooks" / "pre-push").write_text("#!/bin/sh\nexit 0\n")
    outputs = await sandboxed(repo, f"{hook(marker)} > .githooks/pre-commit; chmod +x .githooks/pre-commit")
    assert "Read-only file system" in outputs[0]
    host_git_work(repo, host_env)
    assert not marker.exists()


async def test_a_configured_hooks_directory_created_in_the_session_is_moved_aside(
        repo: Path, marker: Path, host_env: dict[str, str]) -> None:
    git(repo, "config", "core.hooksPath", ".husky", env=host_env)
    outputs = await sandboxed(repo, f"mkdir .husky && {hook(marker)} > .husky/pre-commit && chmod +x .husky/pre-commit")
    assert "moved .husky aside" in outputs[0]
    host_git_work(repo, host_env)
    assert not marker.exists()


async def test_ordinary_git_work_still_works_in_the_sandbox(repo: Path, host_env: dict[str, str]) -> None:
    outputs = await sandboxed(
        repo,
        "echo b > b.txt && git add b.txt && git commit -qm second && git branch feature && git checkout -q feature "
        "&& echo c > a.txt && git stash -q && git stash list && git checkout -q main && git stash pop -q "
        "&& git commit -qam third && git tag v1 && git log --oneline | wc -l",
    )
    assert outputs[0].split()[-1] == "3", outputs[0]
    assert git(repo, "log", "--format=%s", env=host_env).stdout.split() == ["third", "second", "first"]
    assert "feature" in git(repo, "branch", env=host_env).stdout


async def test_editor_direnv_and_codeloop_settings_are_read_only(repo: Path, host_env: dict[str, str]) -> None:
    (repo / ".envrc").write_text("export A=1\n")
    (repo / ".vscode").mkdir()
    (repo / ".vscode" / "settings.json").write_text("{}\n")
    (repo / ".codeloop").mkdir()
    outputs = await sandboxed(
        repo,
        "echo 'touch /tmp/x' >> .envrc; echo '{\"x\": 1}' > .vscode/settings.json; echo x > .vscode/tasks.json; "
        "echo 'sandbox = \"off\"' > .codeloop/config.toml; mv .vscode .v2; "
        "mkdir -p .idea .devcontainer; echo x > .idea/workspace.xml; echo '{}' > .devcontainer/devcontainer.json; ls -a",
    )
    assert (repo / ".envrc").read_text() == "export A=1\n"
    assert sorted(p.name for p in (repo / ".vscode").iterdir()) == ["settings.json"]
    assert (repo / ".vscode" / "settings.json").read_text() == "{}\n"
    assert not (repo / ".codeloop" / "config.toml").exists()
    assert not (repo / ".idea").exists() and not (repo / ".devcontainer").exists()  # no placeholder is left
    assert not (repo / ".v2").exists()
    assert "Read-only file system" in outputs[0]


async def test_an_envrc_created_in_the_session_is_moved_aside(repo: Path) -> None:
    outputs = await sandboxed(repo, "echo 'export PATH=/tmp/evil:$PATH' > .envrc")
    assert "moved .envrc aside to .envrc.codeloop-quarantined" in outputs[0]
    assert not (repo / ".envrc").exists()


async def test_file_tools_may_not_write_what_the_host_runs(repo: Path) -> None:
    env = SandboxedExecutionEnvironment(repo, mode="workspace-write")
    await env.initialize()
    for path in (".git/config", ".git/hooks/pre-commit", ".envrc", ".vscode/settings.json", ".codeloop/config.toml",
                 "sub/.git/config", ".devcontainer/devcontainer.json"):
        with pytest.raises(WriteDeniedError, match="what the host runs"):
            await env.write_file(path, "x")
    await env.write_file("src/ok.py", "x = 1\n")  # the rest of the workspace is writable
    assert (repo / "src" / "ok.py").read_text() == "x = 1\n"
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()


@pytest.fixture
def unix_server(tmp_path: Path) -> Iterator[Path]:
    """A Unix socket outside the workspace that answers ``pong`` (a host daemon)."""
    path = tmp_path / "daemon.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"pong")

    threading.Thread(target=serve, daemon=True).start()
    yield path
    listener.close()


@pytest.mark.parametrize("network", [False, True])
async def test_sandbox_off_with_network_off_reaches_no_host_unix_socket(
        tmp_path: Path, unix_server: Path, network: bool) -> None:
    ws = tmp_path / "ws2"
    ws.mkdir()
    env = SandboxedExecutionEnvironment(ws, mode="off", network=network)
    await env.initialize()
    probe = (f"python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{unix_server}'); "
             "print(s.recv(4).decode())\"")
    result = await env.exec_command(probe, timeout_ms=30_000)
    assert ("pong" in result.stdout) is network, result.output
    if not network:
        assert "Operation not permitted" in result.output
        pair = await env.exec_command("python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'ok'); "
                                      "print(b.recv(2).decode())\"")
        assert pair.stdout.strip() == "ok", pair.output  # what reaches nothing outside still works


async def _job_done(job: Job) -> None:
    for _ in range(600):
        if job.exit_code is not None:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the background job did not end")


@pytest.mark.parametrize("then", ["next command", "session end"])
async def test_what_a_background_job_plants_is_moved_aside(
        repo: Path, marker: Path, host_env: dict[str, str], then: str) -> None:
    env = SandboxedExecutionEnvironment(repo, mode="workspace-write")
    await env.initialize()
    await env.exec_command("true")
    job = env.start_job(f'git init -q sub && git -C sub config core.fsmonitor "touch {marker}; false"')
    await _job_done(job)
    if then == "next command":
        result = await env.exec_command("true")
        assert "moved sub/.git aside" in result.output
    await env.cleanup()
    assert not (repo / "sub" / ".git").exists()
    git(repo / "sub", "status", env=host_env, check=False)
    assert not marker.exists()


async def test_a_rebase_left_with_exec_lines_is_moved_aside(repo: Path, marker: Path, host_env: dict[str, str]) -> None:
    """``git status`` says a rebase is in progress; ``git rebase --continue`` would run its
    ``exec`` lines on the host."""
    outputs = await sandboxed(repo, "echo b > b.txt && git add b.txt && git commit -qm second && "
                              f"GIT_SEQUENCE_EDITOR='sed -i \"1i break\\nexec touch {marker}\"' git rebase -q -i HEAD~1")
    assert "moved .git/rebase-merge aside" in outputs[0], outputs[0]
    git(repo, "rebase", "--continue", env=host_env, check=False)
    host_git_work(repo, host_env)
    assert not marker.exists()


async def test_a_rebase_that_stops_on_a_conflict_is_kept(repo: Path, host_env: dict[str, str]) -> None:
    outputs = await sandboxed(repo, "git checkout -q -b side && echo s > a.txt && git commit -qam side && "
                              "git checkout -q main && echo m > a.txt && git commit -qam main && "
                              "git checkout -q side && git rebase -q main; git status --short")
    assert "codeloop:" not in outputs[0] and "UU a.txt" in outputs[0], outputs[0]
    assert "rebase in progress" in git(repo, "status", env=host_env).stdout
