"""The one place where a process is started and killed (DESIGN.md "Layers", loop spec §4.2, §5.4).

``run_process`` starts ``argv`` in a new session (so it leads a new process group that
can be killed as a whole, grandchildren included), reads stdout and stderr concurrently
while it runs, and always returns within ``timeout + kill grace + a short drain``:

- **Timeout:** SIGTERM to the group, ``limits.kill_grace_ms``, then SIGKILL.
- **Lingering pipes:** a background grandchild (``sleep 100 &``) keeps the pipes open after
  the command exits. We wait ``DRAIN_TIMEOUT_S`` for end of output, then SIGKILL the group
  and stop reading. A background job that must survive redirects its output
  (``cmd > log 2>&1 &``): it then holds no pipe and is left alone.
- **Abort:** cancelling the awaiting task (``asyncio.CancelledError``) SIGKILLs the group,
  removes the spill file and re-raises.
- **Memory:** each stream keeps at most ``limits.memory_cap_bytes`` in memory (its head
  and its tail). Once a stream passes the cap, the complete interleaved output goes to a
  temporary file (``ExecResult.full_output_path``) instead of memory.

Exit is detected with a pidfd on Linux (no helper thread), else ``Popen.wait`` in a thread.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from codeloop.environments.base import ExecLimits, ExecResult, OutputCallback, OutputStream

DRAIN_TIMEOUT_S = 0.5
"""How long output is still collected after the command exited while something holds its pipes."""
REAP_TIMEOUT_S = 5.0
"""How long to wait for a SIGKILLed process to be reaped before giving up on it."""

_READ_SIZE = 1 << 18
_PIPE_SIZE = 1 << 20
_F_SETPIPE_SZ = 1031
_STREAMS: tuple[OutputStream, OutputStream] = ("stdout", "stderr")
_log = logging.getLogger(__name__)


def signal_process_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to the process group ``pgid``; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class _HeadTail:
    """The first and the last bytes of one stream within ``cap`` bytes of memory."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            # Trim in batches: deleting the front on every chunk would be quadratic.
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    def render(self) -> str:
        if len(self.tail) > self.tail_cap:
            del self.tail[: len(self.tail) - self.tail_cap]
        if self.total == len(self.head) + len(self.tail):
            return (self.head + self.tail).decode("utf-8", "replace")
        head = _without_partial_end(bytes(self.head))
        tail = _without_partial_start(bytes(self.tail))
        omitted = self.total - len(head) - len(tail)
        return (
            head.decode("utf-8", "replace")
            + f"\n[... {omitted} bytes omitted ...]\n"
            + tail.decode("utf-8", "replace")
        )


def _without_partial_end(data: bytes) -> bytes:
    """Drop a UTF-8 sequence cut off at the end, so the cut shows no U+FFFD."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


def _without_partial_start(data: bytes) -> bytes:
    """Drop UTF-8 continuation bytes at the start (the rest of a character cut off)."""
    skip = 0
    while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
        skip += 1
    return data[skip:]


class _Capture:
    """Collects both streams: whole in memory below the cap, else head/tail + spill file."""

    def __init__(self, cap: int, on_output: OutputCallback | None, keep_full_output: bool = True) -> None:
        self.cap = max(cap, 2)
        self.keep_full_output = keep_full_output
        self.sizes = [0, 0]
        self.chunks: list[tuple[int, bytes]] | None = []
        self.parts: list[_HeadTail] = []
        self.spill: BinaryIO | None = None
        self.spill_path: str | None = None
        self.on_output = on_output
        self.decoders = [codecs.getincrementaldecoder("utf-8")("replace") for _ in _STREAMS]

    def feed(self, idx: int, data: bytes) -> None:
        self.sizes[idx] += len(data)
        if self.chunks is not None:
            self.chunks.append((idx, data))
            if self.sizes[idx] > self.cap:
                self._start_spill()
        else:
            if self.spill is not None:
                self.spill.write(data)
            self.parts[idx].feed(data)
        if self.on_output is not None:
            self._emit(idx, self.decoders[idx].decode(data))

    def _emit(self, idx: int, text: str) -> None:
        if not text or self.on_output is None:
            return
        try:
            self.on_output(_STREAMS[idx], text)
        except Exception:
            _log.exception("on_output callback raised; output collection continues")

    def _start_spill(self) -> None:
        if self.keep_full_output:
            fd, self.spill_path = tempfile.mkstemp(prefix="codeloop-output-", suffix=".log")
            self.spill = os.fdopen(fd, "wb", buffering=_PIPE_SIZE)
        self.parts = [_HeadTail(self.cap), _HeadTail(self.cap)]
        assert self.chunks is not None
        for idx, data in self.chunks:
            if self.spill is not None:
                self.spill.write(data)
            self.parts[idx].feed(data)
        self.chunks = None

    def finish(self) -> tuple[str, str, str | None]:
        """Return (stdout, stderr, full_output_path) and flush pending callback text."""
        for idx in range(len(_STREAMS)):
            self._emit(idx, self.decoders[idx].decode(b"", final=True))
        if self.chunks is not None:
            texts = [
                b"".join(data for i, data in self.chunks if i == idx).decode("utf-8", "replace")
                for idx in range(len(_STREAMS))
            ]
            return texts[0], texts[1], None
        if self.spill is not None:
            self.spill.close()
        return self.parts[0].render(), self.parts[1].render(), self.spill_path

    def discard(self) -> None:
        if self.spill is not None:
            with contextlib.suppress(OSError):
                self.spill.close()
        if self.spill_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.spill_path)


def _open_pipe() -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    # Fewer, larger reads for chatty commands; refused above /proc/sys/fs/pipe-max-size.
    with contextlib.suppress(OSError):
        import fcntl

        fcntl.fcntl(read_fd, _F_SETPIPE_SZ, _PIPE_SIZE)
    os.set_blocking(read_fd, False)
    return read_fd, write_fd


def _elapsed_ms(start: float) -> int:
    return int((time.monotonic() - start) * 1000)


async def _wait(futures: Iterable[asyncio.Future[None]], seconds: float) -> bool:
    """Wait until every future is done or ``seconds`` pass; True when all are done."""
    pending = [f for f in futures if not f.done()]
    if not pending:
        return True
    if seconds <= 0:
        return False
    _, still = await asyncio.wait(pending, timeout=seconds)
    return not still


async def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_ms: int,
    limits: ExecLimits,
    on_output: OutputCallback | None = None,
    running: set[int] | None = None,
    keep_full_output: bool = True,
) -> ExecResult:
    """Run ``argv`` to completion or timeout and return what it printed (loop spec §4.2, §5.4).

    ``env`` is the complete environment (already filtered, §4.2); stdin is ``/dev/null``.
    ``on_output`` receives decoded chunks as they arrive. ``running``, when given, holds the
    process-group id while the command runs, so an owner can kill it from elsewhere
    (``signal_process_group``); the command then ends with ``exit_code == -9``.
    ``keep_full_output=False`` skips the spill file (for callers that consume ``on_output``).

    Never raises for a failing or unstartable command (``exit_code == -1`` and the reason
    in ``stderr``); raises ``CancelledError`` after killing the group when cancelled.
    """
    loop = asyncio.get_running_loop()
    start = time.monotonic()
    out_r, out_w = _open_pipe()
    err_r, err_w = _open_pipe()
    try:
        # Popen only forks and execs (no waiting); the asyncio subprocess API would add a
        # transport, protocol and watcher per command for nothing we need.
        proc = subprocess.Popen(  # noqa: ASYNC220
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        os.close(out_r)
        os.close(err_r)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return ExecResult(
            stdout="",
            stderr=f"Could not start {argv[0] if argv else 'command'!r} in {cwd}: {reason}",
            exit_code=-1,
            timed_out=False,
            duration_ms=_elapsed_ms(start),
        )
    finally:
        os.close(out_w)
        os.close(err_w)

    pgid = proc.pid
    if running is not None:
        running.add(pgid)
    capture = _Capture(limits.memory_cap_bytes, on_output, keep_full_output)
    open_fds: dict[int, asyncio.Future[None]] = {}

    def close_reader(fd: int) -> None:
        future = open_fds.pop(fd, None)
        if future is None:
            return
        loop.remove_reader(fd)
        os.close(fd)
        if not future.done():
            future.set_result(None)

    def on_readable(fd: int, idx: int) -> None:
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            capture.feed(idx, data)
        else:
            close_reader(fd)

    eof_futures = []
    for idx, fd in enumerate((out_r, err_r)):
        future: asyncio.Future[None] = loop.create_future()
        open_fds[fd] = future
        eof_futures.append(future)
        loop.add_reader(fd, on_readable, fd, idx)

    exited: asyncio.Future[None] = loop.create_future()
    pidfd: int | None = None
    waiter: asyncio.Future[int] | None = None

    def mark_exited(*_: object) -> None:
        if not exited.done():
            exited.set_result(None)

    try:
        pidfd = os.pidfd_open(pgid)
    except (AttributeError, OSError):
        waiter = asyncio.ensure_future(asyncio.to_thread(proc.wait))
        waiter.add_done_callback(mark_exited)
    else:
        fd_of_pid = pidfd

        def on_pidfd_readable() -> None:
            # Level-triggered: stop watching at once or the loop spins until cleanup.
            loop.remove_reader(fd_of_pid)
            mark_exited()

        loop.add_reader(pidfd, on_pidfd_readable)

    timed_out = False
    try:
        deadline = start + timeout_ms / 1000
        if not await _wait([exited], deadline - time.monotonic()):
            timed_out = True
            signal_process_group(pgid, signal.SIGTERM)
            if not await _wait([exited], limits.kill_grace_ms / 1000):
                signal_process_group(pgid, signal.SIGKILL)
                await _wait([exited], REAP_TIMEOUT_S)
        if not await _wait(eof_futures, DRAIN_TIMEOUT_S):
            signal_process_group(pgid, signal.SIGKILL)
            await _wait(eof_futures, 0.1)
    except BaseException:
        signal_process_group(pgid, signal.SIGKILL)
        capture.discard()
        raise
    finally:
        for fd in list(open_fds):
            close_reader(fd)
        if pidfd is not None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
        if running is not None:
            running.discard(pgid)
        proc.poll()
        if waiter is not None and not waiter.done():
            waiter.remove_done_callback(mark_exited)

    stdout, stderr, full_path = capture.finish()
    return ExecResult(
        stdout=stdout,
        stderr=stderr,
        exit_code=proc.returncode if proc.returncode is not None else -1,
        timed_out=timed_out,
        duration_ms=_elapsed_ms(start),
        stdout_bytes=capture.sizes[0],
        stderr_bytes=capture.sizes[1],
        full_output_path=full_path,
    )
