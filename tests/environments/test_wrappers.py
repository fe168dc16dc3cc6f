"""The §4.4 wrappers: what they add on top of the conformance suite."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from codeloop.environments import (
    ExecutionEnvironment,
    LocalExecutionEnvironment,
    LoggingExecutionEnvironment,
    ReadOnlyExecutionEnvironment,
    WriteDeniedError,
)


async def test_4_4_logging_wrapper_logs_command_exit_and_duration(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = LoggingExecutionEnvironment(LocalExecutionEnvironment(tmp_path))
    with caplog.at_level(logging.INFO, logger="codeloop.environments"):
        result = await env.exec_command("exit 3")
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "exec: exit 3"
    assert messages[1] == f"exit: 3 in {result.duration_ms}ms"


async def test_4_4_logging_wrapper_logs_writes_and_failures(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.env")
    env = LoggingExecutionEnvironment(LocalExecutionEnvironment(tmp_path), logger)
    with caplog.at_level(logging.INFO, logger="test.env"):
        await env.write_file("a.txt", "abc")
        with pytest.raises(Exception, match="outside"):
            await env.write_file("../b.txt", "x")
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["write", "write ../b.txt failed"]
    assert caplog.records[1].levelno == logging.WARNING


async def test_4_4_logging_wrapper_does_not_log_env_var_values(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = LoggingExecutionEnvironment(LocalExecutionEnvironment(tmp_path))
    with caplog.at_level(logging.DEBUG):
        await env.exec_command("true", env_vars={"TOKEN_VALUE": "s3cr3t"})
    assert "s3cr3t" not in caplog.text


async def test_4_4_read_only_wrapper_refuses_writes_with_the_spec_message(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("original")
    env = ReadOnlyExecutionEnvironment(LocalExecutionEnvironment(tmp_path))
    with pytest.raises(WriteDeniedError, match="disabled in read-only mode") as info:
        await env.write_file("keep.txt", "changed")
    assert info.value.path == "keep.txt"
    with pytest.raises(WriteDeniedError):
        await env.delete_file("keep.txt")
    assert (tmp_path / "keep.txt").read_text() == "original"
    assert (await env.exec_command("cat keep.txt")).stdout == "original"


def test_wrappers_satisfy_the_protocol(tmp_path: Path) -> None:
    local = LocalExecutionEnvironment(tmp_path)
    for env in (local, LoggingExecutionEnvironment(local), ReadOnlyExecutionEnvironment(local)):
        assert isinstance(env, ExecutionEnvironment)
        assert env.working_directory() == local.working_directory()


async def test_cleanup_kills_running_commands(tmp_path: Path) -> None:
    import asyncio

    env = LocalExecutionEnvironment(tmp_path)
    task = asyncio.create_task(env.exec_command("sleep 30", timeout_ms=60_000))
    await asyncio.sleep(0.2)
    await env.cleanup()
    result = await asyncio.wait_for(task, 5)
    assert result.exit_code == -15 and not result.timed_out  # Appendix B: SIGTERM first (issue 23)
