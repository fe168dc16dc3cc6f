"""LocalExecutionEnvironment behaviour beyond the shared conformance suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeloop.environments import (
    FileNotFoundInWorkspaceError,
    IsAFileError,
    LocalExecutionEnvironment,
    WriteDeniedError,
)


async def test_glob_path_must_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("x")
    env = LocalExecutionEnvironment(tmp_path)
    with pytest.raises(IsAFileError, match="README"):
        await env.glob("*", "README.md")
    with pytest.raises(FileNotFoundInWorkspaceError):
        await env.glob("*", "no_such_dir")


async def test_check_write_hook_runs_before_every_write_and_delete(tmp_path: Path) -> None:
    """The seam SandboxedExecutionEnvironment uses: refusing here leaves the disk untouched."""
    seen: list[str] = []

    class Guarded(LocalExecutionEnvironment):
        def check_write(self, path: str) -> None:
            seen.append(path)
            raise WriteDeniedError(f"no writes to {path!r}", path=path)

    (tmp_path / "keep.txt").write_text("original")
    env = Guarded(tmp_path)
    with pytest.raises(WriteDeniedError):
        await env.write_file("new/file.txt", "x")
    with pytest.raises(WriteDeniedError):
        await env.delete_file("keep.txt")
    assert seen == ["new/file.txt", "keep.txt"]
    assert not (tmp_path / "new").exists()
    assert (tmp_path / "keep.txt").read_text() == "original"


async def test_build_argv_hook_decides_the_process(tmp_path: Path) -> None:
    class Sh(LocalExecutionEnvironment):
        def build_argv(self, command: str) -> list[str]:
            return ["/bin/sh", "-c", f"echo wrapped; {command}"]

    result = await Sh(tmp_path).exec_command("echo inner")
    assert result.stdout == "wrapped\ninner\n"


async def test_env_policies_reach_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODELOOP_TEST_VISIBLE", "yes")
    monkeypatch.setenv("SERVICE_TOKEN", "t0k3n")
    monkeypatch.setenv("HOME", "/home/tester")
    script = 'echo "${CODELOOP_TEST_VISIBLE:-unset} ${SERVICE_TOKEN:-unset} ${HOME:-unset}"'
    outputs = {}
    for policy in ("inherit-all", "core-only", "none"):
        env = LocalExecutionEnvironment(tmp_path, env_policy=policy)  # type: ignore[arg-type]
        outputs[policy] = (await env.exec_command(script)).stdout.strip()
    assert outputs == {
        "inherit-all": "yes unset /home/tester",
        "core-only": "unset unset /home/tester",
        "none": "unset unset unset",
    }


async def test_environment_changes_are_seen_by_later_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = LocalExecutionEnvironment(tmp_path)
    monkeypatch.setenv("CODELOOP_LATE", "one")
    assert (await env.exec_command('echo "$CODELOOP_LATE"')).stdout == "one\n"
    monkeypatch.setenv("CODELOOP_LATE", "two")
    monkeypatch.setenv("LATE_API_KEY", "secret")
    out = (await env.exec_command('echo "$CODELOOP_LATE ${LATE_API_KEY:-hidden}"')).stdout
    assert out == "two hidden\n"


def test_metadata(tmp_path: Path) -> None:
    env = LocalExecutionEnvironment(tmp_path)
    assert env.working_directory() == os.path.realpath(tmp_path)
    assert env.platform() == "linux"


async def test_changing_the_policy_attribute_takes_effect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODELOOP_TEST_VISIBLE", "yes")
    env = LocalExecutionEnvironment(tmp_path)
    assert (await env.exec_command('echo "${CODELOOP_TEST_VISIBLE:-unset}"')).stdout == "yes\n"
    env.env_policy = "core-only"
    assert (await env.exec_command('echo "${CODELOOP_TEST_VISIBLE:-unset}"')).stdout == "unset\n"
