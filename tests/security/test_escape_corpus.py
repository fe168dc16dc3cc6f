"""Escape-attempt corpus: every file tool, every environment (issue 4 "Security corpus").

Layout for each case: ``tmp/ws`` is the workspace, ``tmp/outside`` holds ``secret.txt``
(``TOP-SECRET``) and ``victim.txt``; the workspace holds a few hostile links made before
the call (a symlink to the outside file, to the outside directory, a relative one, a chain,
a dangling one, and a hard link). A case passes when the tool answers with an error result,
nothing outside the workspace changed (same files, same bytes), and the secret text does
not appear in what the model or the event stream would see.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeloop.environments import (
    ExecutionEnvironment,
    LocalExecutionEnvironment,
    LoggingExecutionEnvironment,
    ReadOnlyExecutionEnvironment,
)
from codeloop.environments.sandbox import SandboxedExecutionEnvironment
from codeloop.environments.ssh import SSHExecutionEnvironment
from codeloop.tools import execute_tool_call
from codeloop.tools.sets import all_tools_registry
from environments.sshd import SshServer, start_sshd  # tests/ is on sys.path (rootdir packages)

SECRET = "TOP-SECRET"


@dataclass(frozen=True)
class Attempt:
    id: str
    tool: str
    args: Callable[[Path], dict[str, object]]
    """Arguments given the path of the outside directory."""


def _patch(body: str) -> dict[str, object]:
    return {"patch": f"*** Begin Patch\n{body}\n*** End Patch"}


ATTEMPTS: list[Attempt] = [
    # `..` in every position
    Attempt("dotdot-leading", "read_file", lambda o: {"file_path": "../outside/secret.txt"}),
    Attempt("dotdot-middle", "read_file", lambda o: {"file_path": "sub/../../outside/secret.txt"}),
    Attempt("dotdot-deep", "read_file", lambda o: {"file_path": "a/b/../../../outside/secret.txt"}),
    Attempt("dotdot-dot-prefix", "read_file", lambda o: {"file_path": "./../outside/secret.txt"}),
    Attempt("dotdot-double-slash", "read_file", lambda o: {"file_path": "..//outside//secret.txt"}),
    Attempt("dotdot-trailing", "list_dir", lambda o: {"path": "sub/../.."}),
    Attempt("dotdot-only", "list_dir", lambda o: {"path": ".."}),
    # absolute paths
    Attempt("absolute-outside", "read_file", lambda o: {"file_path": str(o / "secret.txt")}),
    Attempt("absolute-etc", "read_file", lambda o: {"file_path": "/etc/shadow"}),
    Attempt("absolute-write", "write_file", lambda o: {"file_path": str(o / "victim.txt"), "content": "pwned"}),
    Attempt("absolute-new", "write_file", lambda o: {"file_path": str(o / "new.txt"), "content": "pwned"}),
    # symlinks made in the workspace, pointing out
    Attempt("symlink-file-read", "read_file", lambda o: {"file_path": "link_file"}),
    Attempt("symlink-dir-read", "read_file", lambda o: {"file_path": "link_dir/secret.txt"}),
    Attempt("symlink-relative-read", "read_file", lambda o: {"file_path": "rel_link"}),
    Attempt("symlink-chain-read", "read_file", lambda o: {"file_path": "chain1"}),
    Attempt("symlink-file-write", "write_file", lambda o: {"file_path": "link_file", "content": "pwned"}),
    Attempt("symlink-dir-write", "write_file", lambda o: {"file_path": "link_dir/victim.txt", "content": "pwned"}),
    Attempt("symlink-dir-create", "write_file", lambda o: {"file_path": "link_dir/new.txt", "content": "pwned"}),
    Attempt("symlink-dangling-create", "write_file", lambda o: {"file_path": "dangling", "content": "pwned"}),
    Attempt(
        "symlink-edit",
        "edit_file",
        lambda o: {"file_path": "link_dir/victim.txt", "old_string": "victim", "new_string": "pwned"},
    ),
    Attempt("symlink-list", "list_dir", lambda o: {"path": "link_dir"}),
    Attempt("symlink-grep", "grep", lambda o: {"pattern": "SECRET", "path": "link_dir"}),
    Attempt("symlink-glob", "glob", lambda o: {"pattern": "*", "path": "link_dir"}),
    Attempt("symlink-many", "read_many_files", lambda o: {"paths": ["inside.txt", "link_file"]}),
    # hard link to an outside file
    Attempt("hardlink-read", "read_file", lambda o: {"file_path": "hard_link"}),
    Attempt(
        "hardlink-edit",
        "edit_file",
        lambda o: {"file_path": "hard_victim", "old_string": "victim", "new_string": "pwned"},
    ),
    # NUL bytes and lengths
    Attempt("nul-byte", "read_file", lambda o: {"file_path": "inside.txt\x00/../../outside/secret.txt"}),
    Attempt("nul-write", "write_file", lambda o: {"file_path": "x\x00y", "content": "pwned"}),
    Attempt("very-long", "read_file", lambda o: {"file_path": "a/" * 3000 + "x"}),
    Attempt("long-component", "write_file", lambda o: {"file_path": "n" * 300, "content": "x"}),
    # look-alikes and encodings: literal names, never traversal
    Attempt("unicode-two-dot-leader", "read_file", lambda o: {"file_path": "\u2025/outside/secret.txt"}),
    Attempt("unicode-fullwidth-dots", "read_file", lambda o: {"file_path": "\uff0e\uff0e/outside/secret.txt"}),
    Attempt("unicode-division-slash", "read_file", lambda o: {"file_path": "..\u2215outside\u2215secret.txt"}),
    Attempt("backslashes", "read_file", lambda o: {"file_path": "..\\outside\\secret.txt"}),
    Attempt("url-encoded", "read_file", lambda o: {"file_path": "%2e%2e/outside/secret.txt"}),
    Attempt("tilde", "read_file", lambda o: {"file_path": "~/../../" + str(o).lstrip("/") + "/secret.txt"}),
    # /proc
    Attempt("proc-self-root", "read_file", lambda o: {"file_path": f"/proc/self/root{o}/secret.txt"}),
    Attempt("proc-self-cwd", "read_file", lambda o: {"file_path": "/proc/self/cwd/../outside/secret.txt"}),
    # apply_patch in all its forms
    Attempt("patch-add-dotdot", "apply_patch", lambda o: _patch("*** Add File: ../outside/new.txt\n+pwned")),
    Attempt("patch-add-absolute", "apply_patch", lambda o: _patch(f"*** Add File: {o}/new.txt\n+pwned")),
    Attempt(
        "patch-update-symlink",
        "apply_patch",
        lambda o: _patch("*** Update File: link_dir/victim.txt\n@@\n-victim\n+pwned"),
    ),
    Attempt("patch-delete-outside", "apply_patch", lambda o: _patch("*** Delete File: ../outside/victim.txt")),
    Attempt(
        "patch-move-out",
        "apply_patch",
        lambda o: _patch("*** Update File: inside.txt\n*** Move to: ../outside/moved.txt\n@@\n-inside\n+inside"),
    ),
    # search tools
    Attempt("grep-dotdot", "grep", lambda o: {"pattern": "SECRET", "path": ".."}),
    Attempt("grep-absolute", "grep", lambda o: {"pattern": "SECRET", "path": str(o)}),
    Attempt("glob-dotdot-pattern", "glob", lambda o: {"pattern": "../outside/*"}),
    Attempt("glob-absolute-pattern", "glob", lambda o: {"pattern": f"{o}/*"}),
    Attempt("glob-dotdot-path", "glob", lambda o: {"pattern": "**/*", "path": "../outside"}),
]

ENVIRONMENTS = ["local", "logging", "read-only-wrapper", "sandbox-workspace-write", "sandbox-read-only", "ssh"]


def _snapshot(directory: Path) -> dict[str, str]:
    state = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.is_symlink():
            state[str(path.relative_to(directory))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    server = start_sshd(tmp_path_factory.mktemp("sshd-security"))
    yield server
    server.stop()


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "victim.txt").write_text("victim\n")
    (ws / "inside.txt").write_text("inside\n")
    (ws / "sub").mkdir()
    (ws / "link_file").symlink_to(outside / "secret.txt")
    (ws / "link_dir").symlink_to(outside)
    (ws / "rel_link").symlink_to("../outside/secret.txt")
    (ws / "chain2").symlink_to(outside / "secret.txt")
    (ws / "chain1").symlink_to("chain2")
    (ws / "dangling").symlink_to(outside / "created-by-dangling.txt")
    os.link(outside / "secret.txt", ws / "hard_link")
    os.link(outside / "victim.txt", ws / "hard_victim")
    return ws, outside


@pytest.fixture(params=ENVIRONMENTS)
async def setup(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[ExecutionEnvironment, Path]]:
    ws, outside = _layout(tmp_path)
    kind = request.param
    env: ExecutionEnvironment
    if kind == "ssh":
        server: SshServer = request.getfixturevalue("sshd")
        env = SSHExecutionEnvironment(
            server.host, str(ws), port=server.port, username=server.user,
            client_keys=[str(server.user_key)], known_hosts=str(server.known_hosts),
        )
    elif kind.startswith("sandbox"):
        env = SandboxedExecutionEnvironment(ws, mode=kind.removeprefix("sandbox-"))  # type: ignore[arg-type]
    else:
        local = LocalExecutionEnvironment(ws)
        env = {"local": local, "logging": LoggingExecutionEnvironment(local)}.get(kind) or ReadOnlyExecutionEnvironment(local)
    await env.initialize()
    yield env, outside
    await env.cleanup()


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=[a.id for a in ATTEMPTS])
async def test_escape_attempt_is_refused_and_changes_nothing_outside(
    setup: tuple[ExecutionEnvironment, Path], attempt: Attempt
) -> None:
    env, outside = setup
    before = _snapshot(outside)
    result = await execute_tool_call(all_tools_registry(), attempt.tool, attempt.args(outside), env)
    seen = result.output + result.full_output
    assert SECRET not in seen, f"the secret leaked through {attempt.tool}: {seen[:300]}"
    assert _snapshot(outside) == before, "something outside the workspace changed"
    assert not (outside / "created-by-dangling.txt").exists()
    if attempt.tool not in ("grep", "glob", "list_dir", "read_many_files") or attempt.id.endswith(("dotdot", "absolute", "pattern", "path", "only", "trailing")):
        assert result.is_error, f"expected an error result, got: {result.output[:300]}"
        assert result.output.strip(), "an error result must say what went wrong"


def test_corpus_has_at_least_forty_attempts() -> None:
    assert len(ATTEMPTS) >= 40


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
async def test_shell_cannot_write_outside_when_the_sandbox_forbids_it(tmp_path: Path, mode: str) -> None:
    ws, outside = _layout(tmp_path)
    before = _snapshot(outside)
    env = SandboxedExecutionEnvironment(ws, mode=mode)  # type: ignore[arg-type]
    await env.initialize()
    command = (
        f"echo pwned > {outside}/victim.txt; echo pwned > {outside}/new.txt; rm -f {outside}/secret.txt; "
        "echo pwned > link_dir/victim.txt; ln -f link_file x 2>/dev/null; true"
    )
    result = await execute_tool_call(all_tools_registry(), "shell", {"command": command}, env)
    # Outside the workspace is either read-only or, under the private /tmp, not there at all.
    assert "Read-only file system" in result.full_output or "No such file or directory" in result.full_output
    assert _snapshot(outside) == before


async def test_sandboxed_shell_cannot_create_hard_links_to_files_outside(tmp_path: Path) -> None:
    """A hard link made *before* the sandbox shares its inode (documented limit); the
    sandbox stops a command from making new ones: the outside is another mount (EXDEV)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    target = Path.home() / f".codeloop-hardlink-target-{os.getpid()}"
    target.write_text("victim\n")
    try:
        env = SandboxedExecutionEnvironment(ws, mode="workspace-write")
        await env.initialize()
        result = await env.exec_command(f"ln {target} grab && echo pwned > grab")
        assert result.exit_code != 0
        assert not (ws / "grab").exists()
        assert target.read_text() == "victim\n"
    finally:
        target.unlink()


class _SwapAfterCheck(LocalExecutionEnvironment):
    """Plays an attacker who swaps ``sub`` for a symlink to the outside right after the
    path check and before the use (time-of-check to time-of-use)."""

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        resolved = super().resolve(path, must_exist=must_exist)
        sub = self.root / "sub"
        if sub.is_dir() and not sub.is_symlink():
            shutil.rmtree(sub)
            sub.symlink_to(self.root.parent / "outside")
        return resolved


class _SwapAfterWriteCheck(_SwapAfterCheck):
    """Swaps only at the write's own path check (write_file looks at the existing file first,
    to keep its line endings: those earlier checks must see the real directory)."""

    writing = False

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        if self.writing:
            return super().resolve(path, must_exist=must_exist)
        return LocalExecutionEnvironment.resolve(self, path, must_exist=must_exist)

    async def write_file(self, path: str, content: str | bytes) -> int:
        self.writing = True
        return await super().write_file(path, content)


async def test_directory_swapped_for_a_symlink_between_check_and_write_is_refused(tmp_path: Path) -> None:
    ws, outside = _layout(tmp_path)
    before = _snapshot(outside)
    env = _SwapAfterWriteCheck(ws)
    result = await execute_tool_call(
        all_tools_registry(), "write_file", {"file_path": "sub/victim.txt", "content": "pwned"}, env
    )
    assert result.is_error and "changed while it was being used" in result.output
    assert _snapshot(outside) == before


async def test_directory_swapped_for_a_symlink_between_check_and_read_is_refused(tmp_path: Path) -> None:
    ws, _ = _layout(tmp_path)
    (ws / "sub" / "secret.txt").write_text("harmless\n")
    env = _SwapAfterCheck(ws)
    result = await execute_tool_call(all_tools_registry(), "read_file", {"file_path": "sub/secret.txt"}, env)
    assert result.is_error and "changed while it was being used" in result.output
    assert SECRET not in result.output + result.full_output


async def test_file_swapped_for_a_symlink_between_check_and_read_is_refused(tmp_path: Path) -> None:
    ws, outside = _layout(tmp_path)
    (ws / "note.txt").write_text("harmless\n")

    class SwapFile(LocalExecutionEnvironment):
        def resolve(self, path: str, *, must_exist: bool = False) -> Path:
            resolved = super().resolve(path, must_exist=must_exist)
            note = self.root / "note.txt"
            if not note.is_symlink():
                note.unlink()
                note.symlink_to(outside / "secret.txt")
            return resolved

    result = await execute_tool_call(all_tools_registry(), "read_file", {"file_path": "note.txt"}, SwapFile(ws))
    assert result.is_error
    assert SECRET not in result.output + result.full_output


async def test_hard_link_reads_can_be_allowed_explicitly(tmp_path: Path) -> None:
    ws, _ = _layout(tmp_path)
    env = LocalExecutionEnvironment(ws)
    env.allow_hardlinks = True
    result = await execute_tool_call(all_tools_registry(), "read_file", {"file_path": "hard_victim"}, env)
    assert not result.is_error and "victim" in result.output


def test_attempt_arguments_are_json_serialisable() -> None:
    for attempt in ATTEMPTS:
        json.dumps(attempt.args(Path("/tmp/outside")))
