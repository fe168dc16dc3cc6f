"""run_process: the one place a process starts and dies (loop spec §4.2, §5.4)."""

# Tests read tiny files synchronously and poll briefly; blocking the loop for that is fine.

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from codeloop.environments.base import ExecLimits
from codeloop.environments.runner import run_process, signal_process_group

FAST_KILL = ExecLimits(kill_grace_ms=300)


async def _run(command: str, tmp_path: Path, timeout_ms: int = 5000, limits: ExecLimits = FAST_KILL, **kw):  # type: ignore[no-untyped-def]
    return await run_process(
        ["/bin/bash", "-c", command], cwd=tmp_path, env={"PATH": os.environ["PATH"]},
        timeout_ms=timeout_ms, limits=limits, **kw,
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ")[1][0] != "Z"


async def test_4_2_stdout_stderr_exit_code_captured_separately(tmp_path: Path) -> None:
    r = await _run("echo out; echo err >&2; exit 3", tmp_path)
    assert (r.stdout, r.stderr, r.exit_code, r.timed_out) == ("out\n", "err\n", 3, False)
    assert r.full_output_path is None


async def test_4_2_runs_in_cwd_with_given_env(tmp_path: Path) -> None:
    r = await run_process(
        ["/bin/bash", "-c", 'pwd; echo "$ONLY"; echo "${HOME:-unset}"'], cwd=tmp_path,
        env={"ONLY": "yes"}, timeout_ms=5000, limits=FAST_KILL,
    )
    assert r.stdout.splitlines() == [os.path.realpath(tmp_path), "yes", "unset"]


async def test_5_4_timeout_terms_the_group_and_keeps_partial_output(tmp_path: Path) -> None:
    start = time.monotonic()
    r = await _run("echo started; sleep 30", tmp_path, timeout_ms=300)
    assert r.timed_out
    assert r.stdout == "started\n"
    assert r.exit_code < 0
    assert time.monotonic() - start < 5


async def test_5_4_sigkill_after_grace_when_sigterm_is_ignored(tmp_path: Path) -> None:
    start = time.monotonic()
    r = await _run("trap '' TERM; echo stubborn; while :; do sleep 0.05; done", tmp_path, timeout_ms=200)
    elapsed = time.monotonic() - start
    assert r.timed_out and r.exit_code == -9
    assert r.stdout == "stubborn\n"
    assert elapsed >= 0.45  # timeout + the 300 ms grace before SIGKILL


async def test_5_4_background_grandchild_dies_with_the_group_on_timeout(tmp_path: Path) -> None:
    r = await _run("sleep 30 & echo $!; sleep 30", tmp_path, timeout_ms=300)
    grandchild = int(r.stdout.strip())
    await asyncio.sleep(0.1)
    assert r.timed_out
    assert not _alive(grandchild)


async def test_grandchild_holding_pipes_does_not_block_return(tmp_path: Path) -> None:
    start = time.monotonic()
    r = await _run("sleep 30 & echo $!", tmp_path, timeout_ms=10_000)
    assert time.monotonic() - start < 3
    assert not r.timed_out and r.exit_code == 0
    await asyncio.sleep(0.1)
    assert not _alive(int(r.stdout.strip()))


async def test_detached_background_job_with_redirected_output_survives(tmp_path: Path) -> None:
    r = await _run("sleep 30 >/dev/null 2>&1 & echo $!", tmp_path)
    pid = int(r.stdout.strip())
    try:
        assert _alive(pid)
    finally:
        os.kill(pid, 9)


async def test_output_over_the_cap_keeps_head_and_tail_and_spills_everything(tmp_path: Path) -> None:
    limits = ExecLimits(memory_cap_bytes=10_000)
    r = await _run("echo FIRST; seq 1 100000; echo LAST; echo E1 >&2", tmp_path, limits=limits)
    assert r.stdout.startswith("FIRST\n1\n2\n")
    assert r.stdout.endswith("100000\nLAST\n")
    assert "bytes omitted ...]" in r.stdout
    assert len(r.stdout) < 10_100
    assert r.stderr == "E1\n"
    assert r.full_output_path is not None
    full = Path(r.full_output_path).read_text()
    Path(r.full_output_path).unlink()
    assert full.startswith("FIRST\n1\n") and "E1\n" in full and "LAST\n" in full
    assert r.stdout_bytes == len(full) - 3


async def test_omitted_marker_counts_the_bytes_left_out(tmp_path: Path) -> None:
    r = await _run("head -c 5000 /dev/zero | tr '\\0' a", tmp_path, limits=ExecLimits(memory_cap_bytes=1000))
    head, marker_and_tail = r.stdout.split("\n[... ", 1)
    omitted, tail = marker_and_tail.split(" bytes omitted ...]\n")
    assert len(head) + int(omitted) + len(tail) == 5000
    assert r.full_output_path is not None
    os.unlink(r.full_output_path)


async def test_cut_never_splits_a_utf8_character(tmp_path: Path) -> None:
    r = await _run("for i in $(seq 3000); do printf 'é'; done", tmp_path, limits=ExecLimits(memory_cap_bytes=1001))
    assert "\ufffd" not in r.stdout
    assert r.full_output_path is not None
    os.unlink(r.full_output_path)


async def test_invalid_utf8_is_replaced_not_crashing(tmp_path: Path) -> None:
    r = await _run("printf 'ok\\xff\\xfe!'", tmp_path)
    assert r.stdout == "ok\ufffd\ufffd!"


async def test_on_output_streams_decoded_chunks_while_running(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    r = await _run("echo a; printf 'é' ; echo b >&2", tmp_path, on_output=lambda s, t: seen.append((s, t)))
    assert "".join(t for s, t in seen if s == "stdout") == r.stdout == "a\né"
    assert "".join(t for s, t in seen if s == "stderr") == "b\n"


async def test_raising_callback_does_not_break_collection(tmp_path: Path) -> None:
    def bad(stream: str, text: str) -> None:
        raise RuntimeError("boom")

    r = await _run("echo fine", tmp_path, on_output=bad)
    assert r.stdout == "fine\n"


async def test_unstartable_command_is_a_result_not_an_exception(tmp_path: Path) -> None:
    r = await run_process(["/no/such/shell", "-c", "true"], cwd=tmp_path, env={}, timeout_ms=1000, limits=FAST_KILL)
    assert not r.started and "/no/such/shell" in r.stderr and "No such file" in r.stderr
    r = await run_process(["/bin/bash"], cwd=tmp_path / "missing", env={}, timeout_ms=1000, limits=FAST_KILL)
    assert not r.started and "missing" in r.stderr


async def test_a_process_killed_by_sighup_started_although_its_exit_code_is_minus_one(tmp_path: Path) -> None:
    # python3 resets SIGHUP to its default first: under nohup it is ignored, and bash cannot undo that.
    r = await _run("exec python3 -c 'import os,signal as s;s.signal(1,s.SIG_DFL);os.kill(0,1)'", tmp_path)
    assert r.started and r.exit_code == -1 and not r.timed_out


async def test_cancellation_kills_the_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    task = asyncio.create_task(_run(f"sleep 30 & echo $! > {pid_file}; sleep 30", tmp_path, timeout_ms=60_000))
    for _ in range(100):
        await asyncio.sleep(0.02)
        if pid_file.exists() and pid_file.read_text().strip():
            break
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("cancel was swallowed")
    await asyncio.sleep(0.1)
    assert not _alive(int(pid_file.read_text()))


async def test_running_set_lets_an_owner_kill_the_command(tmp_path: Path) -> None:
    running: set[int] = set()
    task = asyncio.create_task(_run("sleep 30", tmp_path, timeout_ms=60_000, running=running))
    while not running:
        await asyncio.sleep(0.01)
    signal_process_group(next(iter(running)), 9)
    r = await task
    assert r.exit_code == -9 and not r.timed_out
    assert running == set()


@given(
    chunks=st.lists(st.binary(max_size=300), max_size=40),
    cap=st.integers(min_value=2, max_value=400),
)
def test_property_capture_keeps_a_true_head_and_tail_within_the_cap(chunks: list[bytes], cap: int) -> None:
    """Whatever arrives, memory holds at most cap bytes per stream, the kept head is a prefix,
    the kept tail a suffix, and the marker counts exactly what is left out."""
    from codeloop.environments.runner import _HeadTail

    data = b"".join(chunks)
    keeper = _HeadTail(cap)
    for chunk in chunks:
        keeper.feed(chunk)
        assert len(keeper.head) + len(keeper.tail) <= cap + max(cap - cap // 2, 0) + len(chunk)
    text = keeper.render()
    if len(data) <= cap:
        assert text == data.decode("utf-8", "replace")
        return
    head, rest = text.split("\n[... ", 1)
    omitted, tail = rest.split(" bytes omitted ...]\n", 1)
    head_b, tail_b = head.encode("utf-8", "surrogateescape"), tail.encode("utf-8", "surrogateescape")
    if "\ufffd" not in head and "\ufffd" not in tail:
        assert data.startswith(head_b) and data.endswith(tail_b)
        assert len(head_b) + int(omitted) + len(tail_b) == len(data)
    assert len(head) <= cap and len(tail) <= cap  # one character per byte at most


def test_5_4_default_limits() -> None:
    limits = ExecLimits()
    assert (limits.default_timeout_ms, limits.max_timeout_ms, limits.kill_grace_ms) == (10_000, 600_000, 2_000)


async def test_bad_environment_value_is_a_result_and_leaks_no_descriptor(tmp_path: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    r = await run_process(
        ["/bin/bash", "-c", "true"], cwd=tmp_path, env={"X": None},  # type: ignore[dict-item]
        timeout_ms=1000, limits=FAST_KILL,
    )
    assert not r.started and "Could not start" in r.stderr
    assert len(os.listdir("/proc/self/fd")) == before


async def test_stdin_data_is_the_command_input_and_never_blocks_one_that_does_not_read(tmp_path: Path) -> None:
    r = await _run("wc -c", tmp_path, stdin_data=b"x" * 3_000_000)
    assert r.stdout.strip() == "3000000" and r.exit_code == 0
    # Far more than a pipe holds, and the command exits without reading it.
    r = await _run("echo done", tmp_path, stdin_data=b"y" * 3_000_000)
    assert (r.stdout, r.exit_code, r.timed_out) == ("done\n", 0, False)
    r = await _run("cat", tmp_path)
    assert r.stdout == ""  # no stdin_data: /dev/null, as before
