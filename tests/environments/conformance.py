"""The ExecutionEnvironment conformance suite (loop spec §4.1, §4.2, §5.4).

Any environment proves it behaves like the local one by running these tests. In your
own test module::

    from .conformance import *  # noqa: F403  (the shared tests and the ``env`` fixture)

    @pytest.fixture
    def env_factory():
        def make(root: Path, limits: ExecLimits) -> ExecutionEnvironment:
            return MyEnvironment(root, limits=limits)
        return make

Contract for the factory: ``root`` is an existing local directory that the environment
must use as its workspace (the tests prepare files and symlinks in it directly and look
at what commands left there); ``limits`` must be honoured (the suite uses short timeouts
and small caps). The suite calls ``initialize()`` before and ``cleanup()`` after each test.

Optional fixtures to override: ``env_writable`` (``False`` for environments whose file
tools refuse writes: then every write must raise ``WriteDeniedError`` and change nothing).
"""

from __future__ import annotations

import asyncio
import os
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from codeloop.environments.base import DirEntry, ExecLimits, ExecutionEnvironment, GrepOptions
from codeloop.environments.errors import (
    BinaryFileError,
    DecodeError,
    FileNotFoundInWorkspaceError,
    InvalidPatternError,
    IsAFileError,
    NotAFileError,
    PathOutsideWorkspaceError,
    WorkspaceError,
    WriteDeniedError,
)

EnvFactory = Callable[[Path, ExecLimits], ExecutionEnvironment]

SUITE_LIMITS = ExecLimits(default_timeout_ms=10_000, max_timeout_ms=600_000, kill_grace_ms=300)


@pytest.fixture
def env_writable() -> bool:
    """Whether the environment's file tools may write; override for read-only environments."""
    return True


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    return root


@pytest.fixture
def outside(workspace: Path) -> Path:
    return workspace.parent / "outside"


@pytest.fixture
async def env(env_factory: EnvFactory, workspace: Path) -> AsyncIterator[ExecutionEnvironment]:
    environment = env_factory(workspace, SUITE_LIMITS)
    await environment.initialize()
    try:
        yield environment
    finally:
        await environment.cleanup()


@pytest.fixture
def make_env(env_factory: EnvFactory, workspace: Path) -> EnvFactory:
    """Build a second environment on the same workspace with other limits."""
    return lambda root, limits: env_factory(workspace, limits)


def put(root: Path, rel: str, data: str | bytes) -> Path:
    """Prepare a file directly on disk (test setup, not through the environment)."""
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    target.write_bytes(data)
    return target


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# --- File operations (§4.1) -------------------------------------------------------------


async def test_4_1_write_then_read_round_trip(env: ExecutionEnvironment, workspace: Path, env_writable: bool) -> None:
    if not env_writable:
        with pytest.raises(WriteDeniedError, match=r"notes\.txt"):
            await env.write_file("notes.txt", "héllo\n")
        assert not (workspace / "notes.txt").exists()
        return
    written = await env.write_file("notes.txt", "héllo\n")
    assert written == len("héllo\n".encode())
    assert await env.read_file("notes.txt") == "héllo\n"
    assert (workspace / "notes.txt").read_bytes() == "héllo\n".encode()


async def test_4_1_write_creates_parents_and_replaces_without_leftovers(
    env: ExecutionEnvironment, workspace: Path, env_writable: bool
) -> None:
    put(workspace, "keep.txt", "old")
    before = snapshot(workspace)
    if not env_writable:
        with pytest.raises(WriteDeniedError):
            await env.write_file("a/b/c.txt", "x")
        with pytest.raises(WriteDeniedError):
            await env.write_file("keep.txt", "new")
        assert snapshot(workspace) == before
        return
    assert await env.write_file("a/b/c.txt", b"\x00\x01bytes") == 7
    assert (workspace / "a/b/c.txt").read_bytes() == b"\x00\x01bytes"
    await env.write_file("keep.txt", "new")
    assert (workspace / "keep.txt").read_text() == "new"
    assert sorted(p.name for p in workspace.iterdir()) == ["a", "keep.txt"]


async def test_4_1_write_onto_a_directory_is_refused(
    env: ExecutionEnvironment, workspace: Path, env_writable: bool
) -> None:
    (workspace / "d").mkdir()
    with pytest.raises(WriteDeniedError if not env_writable else NotAFileError):
        await env.write_file("d", "x")
    assert (workspace / "d").is_dir()


async def test_4_1_read_offset_and_limit_are_one_based_lines(env: ExecutionEnvironment, workspace: Path) -> None:
    put(workspace, "lines.txt", "one\ntwo\nthree\nfour\n")
    assert await env.read_file("lines.txt", offset=2, limit=2) == "two\nthree\n"
    assert await env.read_file("lines.txt", offset=4) == "four\n"
    assert await env.read_file("lines.txt", limit=1) == "one\n"
    assert await env.read_file("lines.txt", offset=9) == ""


async def test_4_1_read_missing_file_names_it(env: ExecutionEnvironment) -> None:
    with pytest.raises(FileNotFoundInWorkspaceError, match=r"missing\.txt"):
        await env.read_file("missing.txt")


async def test_4_1_read_directory_is_not_a_file(env: ExecutionEnvironment, workspace: Path) -> None:
    (workspace / "src").mkdir()
    with pytest.raises(NotAFileError, match="src"):
        await env.read_file("src")


async def test_4_1_binary_file_is_refused_as_text_but_readable_as_bytes(
    env: ExecutionEnvironment, workspace: Path
) -> None:
    put(workspace, "img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(BinaryFileError, match=r"img\.png"):
        await env.read_file("img.png")
    assert await env.read_bytes("img.png") == b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


async def test_4_1_invalid_utf8_is_reported_with_its_place(env: ExecutionEnvironment, workspace: Path) -> None:
    put(workspace, "latin1.txt", "ok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(DecodeError, match=r"not valid UTF-8.*line 2"):
        await env.read_file("latin1.txt")


async def test_4_1_delete_file(env: ExecutionEnvironment, workspace: Path, env_writable: bool) -> None:
    put(workspace, "gone.txt", "x")
    (workspace / "dir").mkdir()
    if not env_writable:
        with pytest.raises(WriteDeniedError):
            await env.delete_file("gone.txt")
        assert (workspace / "gone.txt").exists()
        return
    await env.delete_file("gone.txt")
    assert not (workspace / "gone.txt").exists()
    with pytest.raises(FileNotFoundInWorkspaceError):
        await env.delete_file("gone.txt")
    with pytest.raises(NotAFileError):
        await env.delete_file("dir")


async def test_4_1_file_exists(env: ExecutionEnvironment, workspace: Path) -> None:
    put(workspace, "here.txt", "x")
    assert await env.file_exists("here.txt")
    assert not await env.file_exists("nope.txt")
    assert not await env.file_exists("../outside/secret.txt")


async def test_4_1_stat(env: ExecutionEnvironment, workspace: Path) -> None:
    put(workspace, "src/app.py", "print(1)\n")
    info = await env.stat("src/app.py")
    assert (info.path, info.is_dir, info.size) == ("src/app.py", False, 9)
    assert abs(info.mtime - (workspace / "src/app.py").stat().st_mtime) < 1
    assert (await env.stat("src")).is_dir


async def test_4_1_list_directory_with_depth(env: ExecutionEnvironment, workspace: Path) -> None:
    put(workspace, "b.txt", "12345")
    put(workspace, "src/app.py", "x")
    put(workspace, "src/pkg/deep.py", "x")
    assert await env.list_directory(".") == [
        DirEntry("b.txt", False, 5),
        DirEntry("src", True, None),
    ]
    names = [e.name for e in await env.list_directory(".", depth=2)]
    assert names == ["b.txt", "src", "src/app.py", "src/pkg"]
    assert [e.name for e in await env.list_directory("src", depth=3)] == ["app.py", "pkg", "pkg/deep.py"]
    with pytest.raises(IsAFileError):
        await env.list_directory("b.txt")
    with pytest.raises(FileNotFoundInWorkspaceError):
        await env.list_directory("nowhere")


# --- Commands (§4.2, §5.4) ------------------------------------------------------------------


async def test_4_2_exec_captures_stdout_stderr_exit_code_and_duration(env: ExecutionEnvironment) -> None:
    result = await env.exec_command("echo out; echo err >&2; exit 7")
    assert (result.stdout, result.stderr, result.exit_code, result.timed_out) == ("out\n", "err\n", 7, False)
    assert result.duration_ms >= 0
    assert result.output == "out\nerr\n"


async def test_4_2_exec_runs_in_the_workspace_or_a_working_dir(env: ExecutionEnvironment, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    assert (await env.exec_command("pwd")).stdout.strip() == os.path.realpath(workspace)
    assert (await env.exec_command("pwd", working_dir="sub")).stdout.strip() == os.path.realpath(workspace / "sub")
    with pytest.raises(PathOutsideWorkspaceError):
        await env.exec_command("pwd", working_dir="..")


async def test_4_2_env_vars_are_added(env: ExecutionEnvironment) -> None:
    result = await env.exec_command('echo "$GREETING"', env_vars={"GREETING": "hi there"})
    assert result.stdout == "hi there\n"


async def test_4_2_secrets_never_reach_a_command(
    env_factory: EnvFactory, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOO_API_KEY", "sk-leak")
    monkeypatch.setenv("my_db_password", "hunter2")
    monkeypatch.setenv("CODELOOP_SUITE_SETTING", "visible")
    environment = env_factory(workspace, SUITE_LIMITS)
    await environment.initialize()
    try:
        result = await environment.exec_command("env")
    finally:
        await environment.cleanup()
    assert "sk-leak" not in result.stdout and "hunter2" not in result.stdout
    assert "FOO_API_KEY" not in result.stdout


async def test_5_4_timeout_kills_and_keeps_partial_output(env: ExecutionEnvironment) -> None:
    start = time.monotonic()
    result = await env.exec_command("echo before; sleep 30; echo after", timeout_ms=500)
    assert result.timed_out
    assert "before" in result.stdout and "after" not in result.stdout
    assert result.exit_code != 0
    assert time.monotonic() - start < 10


async def test_5_4_background_grandchild_is_killed_with_the_group(
    env: ExecutionEnvironment, workspace: Path
) -> None:
    result = await env.exec_command(
        "(while :; do date +%s%N > tick; sleep 0.05; done) & sleep 30", timeout_ms=300
    )
    assert result.timed_out
    await asyncio.sleep(0.3)
    first = (workspace / "tick").read_text()
    await asyncio.sleep(0.4)
    assert (workspace / "tick").read_text() == first, "the background loop survived the timeout"


async def test_5_4_sigkill_when_sigterm_is_ignored(env: ExecutionEnvironment) -> None:
    start = time.monotonic()
    result = await env.exec_command("trap '' TERM; echo up; while :; do sleep 0.05; done", timeout_ms=300)
    assert result.timed_out and "up" in result.stdout
    assert time.monotonic() - start < 10


async def test_5_4_default_timeout_applies_and_override_is_capped(make_env: EnvFactory, workspace: Path) -> None:
    environment = make_env(workspace, ExecLimits(default_timeout_ms=200, max_timeout_ms=400, kill_grace_ms=200))
    await environment.initialize()
    try:
        start = time.monotonic()
        assert (await environment.exec_command("sleep 30")).timed_out
        assert (await environment.exec_command("sleep 30", timeout_ms=600_000)).timed_out
        assert time.monotonic() - start < 10
        assert not (await environment.exec_command("sleep 0.1", timeout_ms=600_000)).timed_out
    finally:
        await environment.cleanup()


LINE = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklm"


async def test_5_4_huge_output_is_capped_in_memory_and_kept_whole_on_disk(make_env: EnvFactory, workspace: Path) -> None:
    environment = make_env(workspace, ExecLimits(memory_cap_bytes=1_000_000, kill_grace_ms=300))
    await environment.initialize()
    try:
        tracemalloc.start()
        result = await environment.exec_command(
            f"echo FIRST; yes {LINE} | head -n 320000; echo LAST", timeout_ms=60_000
        )
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        await environment.cleanup()
    printed = 6 + 320_000 * (len(LINE) + 1) + 5  # about 20 MB
    assert result.stdout_bytes == printed
    assert peak < 8_000_000, f"peak traced memory {peak} for {printed} bytes of output"
    assert result.stdout.startswith("FIRST\n0123") and result.stdout.endswith("LAST\n")
    assert "bytes omitted" in result.stdout and len(result.stdout) < 1_100_000
    assert result.full_output_path is not None
    full = Path(result.full_output_path)
    try:
        assert full.stat().st_size == printed
        with full.open("rb") as fh:
            assert fh.read(6) == b"FIRST\n"
            fh.seek(-5, os.SEEK_END)
            assert fh.read() == b"LAST\n"
    finally:
        full.unlink()


async def test_5_4_output_streams_to_on_output(env: ExecutionEnvironment) -> None:
    chunks: list[tuple[str, str]] = []
    result = await env.exec_command("echo one; echo two >&2", on_output=lambda s, t: chunks.append((s, t)))
    assert "".join(t for s, t in chunks if s == "stdout") == result.stdout == "one\n"
    assert "".join(t for s, t in chunks if s == "stderr") == "two\n"


async def test_5_4_invalid_utf8_output_is_replaced(env: ExecutionEnvironment) -> None:
    result = await env.exec_command("printf 'a\\377b'")
    assert result.stdout == "a\ufffdb"


# --- Search (§3.3 grep/glob) -----------------------------------------------------------------


@pytest.fixture
def code_tree(workspace: Path) -> Path:
    put(workspace, "src/app.py", "import os\ndef main():\n    return os.getcwd()\n")
    put(workspace, "src/util.py", "def helper():\n    return 'Main'\n")
    put(workspace, "README.md", "# main project\n")
    put(workspace, "build/gen.py", "def main(): pass\n")
    put(workspace, ".gitignore", "build/\n")
    put(workspace, "blob.bin", b"main\x00\x01\x02")
    return workspace


async def test_3_3_grep_content_lines_are_path_line_text(env: ExecutionEnvironment, code_tree: Path) -> None:
    assert await env.grep(r"def \w+") == "src/app.py:2:def main():\nsrc/util.py:1:def helper():"


async def test_3_3_grep_case_insensitive_and_glob_filter(env: ExecutionEnvironment, code_tree: Path) -> None:
    assert await env.grep("main", options=GrepOptions(glob_filter="*.py")) == "src/app.py:2:def main():"
    out = await env.grep("main", options=GrepOptions(case_insensitive=True))
    assert out.splitlines() == ["README.md:1:# main project", "src/app.py:2:def main():", "src/util.py:2:    return 'Main'"]


async def test_3_3_grep_modes_and_max_results(env: ExecutionEnvironment, code_tree: Path) -> None:
    files = await env.grep("return", options=GrepOptions(output_mode="files_with_matches"))
    assert files == "src/app.py\nsrc/util.py"
    assert await env.grep("o", options=GrepOptions(output_mode="count")) == "README.md:1\nsrc/app.py:2"
    assert await env.grep("o", options=GrepOptions(max_results=2)) == "README.md:1:# main project\nsrc/app.py:1:import os"


async def test_3_3_grep_context_lines(env: ExecutionEnvironment, code_tree: Path) -> None:
    out = await env.grep("getcwd", "src", GrepOptions(context_lines=1))
    assert out == "src/app.py-2-def main():\nsrc/app.py:3:    return os.getcwd()"


async def test_3_3_grep_in_a_subdirectory_or_file_and_no_match(env: ExecutionEnvironment, code_tree: Path) -> None:
    assert await env.grep("def", "src/util.py") == "src/util.py:1:def helper():"
    assert await env.grep("nothing-like-this") == ""
    with pytest.raises(FileNotFoundInWorkspaceError):
        await env.grep("x", "no/such/dir")


async def test_3_3_grep_invalid_regex_is_a_clear_error(env: ExecutionEnvironment, code_tree: Path) -> None:
    with pytest.raises(InvalidPatternError, match=r"Invalid regex 'def \('"):
        await env.grep("def (")


async def test_3_3_glob_newest_first_and_gitignore_respected(env: ExecutionEnvironment, code_tree: Path) -> None:
    now = time.time()
    os.utime(code_tree / "src/app.py", (now - 100, now - 100))
    os.utime(code_tree / "src/util.py", (now - 10, now - 10))
    os.utime(code_tree / "README.md", (now - 50, now - 50))
    assert await env.glob("**/*.py") == ["src/util.py", "src/app.py"]
    assert await env.glob("*.md") == ["README.md"]
    assert await env.glob("*.py", "src") == ["src/util.py", "src/app.py"]
    assert await env.glob("**/*.{md,py}") == ["src/util.py", "README.md", "src/app.py"]


async def test_3_3_glob_invalid_pattern_is_a_clear_error(env: ExecutionEnvironment, code_tree: Path) -> None:
    with pytest.raises(InvalidPatternError, match="z-a"):
        await env.glob("[z-a].py")


# --- Path safety (DESIGN.md: one resolver, symlinks included) -------------------------------------


@pytest.fixture
def escape_links(workspace: Path, outside: Path) -> Path:
    (workspace / "link_out").symlink_to(outside)
    (workspace / "secret_link").symlink_to(outside / "secret.txt")
    put(workspace, "src/inner.txt", "inside\n")
    (workspace / "link_in").symlink_to("src")
    return workspace


ESCAPES = ["../outside/secret.txt", "/etc/passwd", "link_out/secret.txt", "secret_link", "link_out/new.txt",
           "src/../../outside/secret.txt", "bad\x00name", "x" * 300, "a/" * 2100 + "f"]


@pytest.mark.parametrize("path", ESCAPES, ids=lambda p: repr(p[:30]))
async def test_paths_outside_the_workspace_are_refused_everywhere(
    env: ExecutionEnvironment, escape_links: Path, outside: Path, path: str
) -> None:
    before = snapshot(outside)
    calls = [
        lambda: env.read_file(path),
        lambda: env.read_bytes(path),
        lambda: env.write_file(path, "pwned"),
        lambda: env.stat(path),
        lambda: env.list_directory(path),
        lambda: env.exec_command("true", working_dir=path),
        lambda: env.grep("secret", path),
        lambda: env.glob("*", path),
    ]
    if path != "secret_link":  # deleting that link itself is allowed (next test)
        calls.append(lambda: env.delete_file(path))
    for call in calls:
        with pytest.raises((PathOutsideWorkspaceError, WriteDeniedError)):
            await call()
    assert not await env.file_exists(path)
    assert snapshot(outside) == before


async def test_deleting_a_symlink_removes_the_link_not_its_target(
    env: ExecutionEnvironment, escape_links: Path, outside: Path, env_writable: bool
) -> None:
    if not env_writable:
        with pytest.raises(WriteDeniedError):
            await env.delete_file("secret_link")
        return
    await env.delete_file("secret_link")
    assert not os.path.lexists(escape_links / "secret_link")
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_symlinks_inside_the_workspace_are_followed(env: ExecutionEnvironment, escape_links: Path) -> None:
    assert await env.read_file("link_in/inner.txt") == "inside\n"


async def test_glob_patterns_cannot_leave_the_workspace(env: ExecutionEnvironment, escape_links: Path) -> None:
    with pytest.raises(PathOutsideWorkspaceError):
        await env.glob("../outside/*")
    with pytest.raises(PathOutsideWorkspaceError):
        await env.glob("/etc/*")


async def test_errors_are_workspace_errors_naming_the_path(env: ExecutionEnvironment) -> None:
    with pytest.raises(WorkspaceError) as info:
        await env.read_file("../x")
    assert "'../x'" in str(info.value) and info.value.path == "../x"


# --- Metadata ---------------------------------------------------------------------------------


async def test_4_1_metadata(env: ExecutionEnvironment, workspace: Path) -> None:
    assert env.working_directory() == os.path.realpath(workspace)
    assert env.platform() in ("linux", "darwin", "windows", "wasm")
    assert env.os_version()
    assert isinstance(env, ExecutionEnvironment)
