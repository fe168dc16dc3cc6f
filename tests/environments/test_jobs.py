"""Background jobs of the runner (issue 21): real processes, the output cap, input, stop."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from codeloop.environments.base import ExecLimits
from codeloop.environments.runner import start_job

from .test_runner import _alive as alive


async def test_unread_output_is_kept_within_the_cap_as_head_and_tail(tmp_path: Path) -> None:
    job = start_job(["sh", "-c", "echo START; head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"],
                    cwd=tmp_path, env=dict(os.environ), limits=ExecLimits(memory_cap_bytes=1000))
    assert await asyncio.to_thread(job.proc.wait) == 0
    assert await job.stop() == 0  # already over: stop only collects the last output
    text = job.read()
    assert text.startswith("START") and text.rstrip().endswith("END") and "bytes omitted" in text
    assert len(text) < 1100
    assert job.read() == ""  # read once


async def test_input_reaches_the_job_and_stop_ends_every_process_it_started(tmp_path: Path) -> None:
    script = ("setsid sh -c 'echo $$ > escaped; exec sleep 300' & "
              "while read line; do echo \"got $line\"; done; sleep 300")
    job = start_job(["bash", "-c", script], cwd=tmp_path, env=dict(os.environ), limits=ExecLimits())
    await job.write("one\n", close=True)
    assert "got one" in await job.first_output()
    while not (tmp_path / "escaped").exists() or not (tmp_path / "escaped").read_text().strip():
        await job.first_output(0.05)
    escaped = int((tmp_path / "escaped").read_text())
    assert job.exit_code is None and alive(escaped)
    assert await job.stop() == -signal.SIGTERM
    for _ in range(500):  # SIGKILL is delivered asynchronously
        if not alive(escaped):
            break
        await job.first_output(0.02)
    assert not alive(escaped)
