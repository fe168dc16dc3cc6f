"""The one place where a process is started and killed (DESIGN.md "Layers", loop spec §4.2, §5.4).

``run_process`` starts ``argv`` in a new session (so it leads a new process group that
can be killed as a whole, grandchildren included), reads stdout and stderr concurrently
while it runs, and always returns within ``timeout + kill grace + a short drain``:

- **Timeout:** SIGTERM to the group, ``limits.kill_grace_ms``, then SIGKILL.
- **Lingering pipes:** a background grandchild (``sleep 100 &``) keeps the pipes open after
  the command exits. We wait ``DRAIN_TIMEOUT_S`` for end of output, then SIGKILL the group
  and stop reading. A background job that must survive redirects its output
  (``cmd > log 2>&1 &``): it then holds no pipe and is left alone.
- **Escapes from the group:** a child that made its own session (``setsid``) is not in
  the group. Every command runs with ``CODELOOP_PROCESS=<id>`` in its environment; after a
  timeout or an abort, every process group whose member still carries that id (Linux
  ``/proc``) is SIGKILLed too. A process that emptied its environment is not found.
- **Abort:** cancelling the awaiting task (``asyncio.CancelledError``) stops the group as
  Appendix B of the loop spec orders: SIGTERM, up to ``limits.kill_grace_ms`` for the
  command to exit, SIGKILL to what remains; then it removes the spill file and re-raises.
- **Memory:** each stream keeps at most ``limits.memory_cap_bytes`` in memory (its head
  and its tail). Once a stream passes the cap, the complete interleaved output goes to a
  temporary file (``ExecResult.full_output_path``) instead of memory.

Exit is detected with a pidfd on Linux (no helper thread), else ``Popen.wait`` in a thread.

**Nothing outlives codeloop** (issue 23): a command's group is out of reach of the signal
that kills codeloop, so each group is registered with a guard process (one per codeloop
process, :func:`_tell_guard`) that SIGKILLs every group still running once codeloop is gone,
by SIGTERM, SIGINT or SIGKILL alike. Programs a library starts (MCP stdio servers) run under
:func:`orphan_proof_argv`. The embedded llama-server is meant to stay and uses neither.

**Background jobs** (issue 21): :func:`start_job` starts a command that outlives the tool
call (:class:`Job`: read its new output, write its stdin, stop it) under the same rules: its
own group, registered with the guard, marked, output kept within the memory cap.

Over 500 lines and not split: starting, supervising and killing a process (the guard, the
group, the marked escapees) are one concern that DESIGN.md wants in one place, and every
piece needs the others' state.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
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


_GUARD_SOURCE = """
import os, signal, sys
groups = set()
for line in sys.stdin.buffer:
    pgid = int(line[1:])
    groups.add(pgid) if line[:1] == b"+" else groups.discard(pgid)
mark = b"CODELOOP_PROCESS=" + sys.argv[1].encode() + b"-"
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open("/proc/" + pid + "/environ", "rb") as f:
            if mark in f.read():
                groups.add(os.getpgid(int(pid)))
    except OSError:
        pass
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""
"""The group guard: reads ``+PGID`` and ``-PGID`` lines (:func:`_tell_guard`); when its stdin
ends (codeloop exited or was killed, even by SIGKILL, since the kernel closes the pipe) it
SIGKILLs every group still listed, and every group holding a process marked with this codeloop
process's tag (``CODELOOP_PROCESS=<tag>-...``): a command started just before codeloop died,
not registered yet, is found that way. (Registering from the child in a ``preexec_fn`` would
close that window too, but makes every spawn a full fork: 2x the cost of a short command.)"""

_GUARD_TAG = uuid.uuid4().hex[:16]
"""This codeloop process's prefix of every command's ``CODELOOP_PROCESS`` marker."""

_guard: subprocess.Popen[bytes] | None = None
_guard_lock = threading.Lock()


def _start_guard() -> None:
    """Start the guard unless it runs (one per codeloop process, before its first command).
    In a session of its own, it outlives codeloop just long enough to kill what was left."""
    global _guard
    with _guard_lock:
        if _guard is None or _guard.poll() is not None:
            try:
                _guard = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _GUARD_SOURCE, _GUARD_TAG], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError as exc:
                _guard = None
                _log.warning("no group guard (commands may outlive codeloop if it is killed): %s", exc)


def _tell_guard(line: str) -> None:
    """Tell the guard that a process group began (``+PGID``) or ended (``-PGID``)."""
    with _guard_lock:
        if _guard is None or _guard.stdin is None:
            return
        try:
            _guard.stdin.write(line.encode() + b"\n")
            _guard.stdin.flush()
        except OSError as exc:
            _log.warning("group guard gone: %s", exc)


_ORPHAN_WRAPPER = """
import ctypes, os, signal, sys
def parent_died(*_):
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGUSR1, parent_died)
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGUSR1)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    parent_died()
child = os.fork()
if child == 0:
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as exc:
        sys.stderr.write(f"cannot start {sys.argv[2]!r}: {exc.strerror}\\n")
        os._exit(127)
_, status = os.waitpid(child, 0)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def orphan_proof_argv(argv: list[str]) -> list[str]:
    """``argv`` run under a small wrapper that kills its whole process group when codeloop
    dies, however it dies (``PR_SET_PDEATHSIG``). For programs that a library starts in a
    process group of their own (MCP stdio servers), where :func:`run_process` is not used.
    The wrapper must be started from the thread that stays alive (the event loop's): Linux
    sends the signal when the *thread* that forked it ends."""
    return [sys.executable, "-I", "-S", "-c", _ORPHAN_WRAPPER, str(os.getpid()), *argv]


def signal_process_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to the process group ``pgid``; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


PROCESS_MARKER_VARIABLE = "CODELOOP_PROCESS"
"""Environment variable whose value names the command a process was started for."""


def process_groups_with(variable: str, value: str, proc: Path = Path("/proc")) -> set[int]:
    """Process-group ids of live processes whose environment holds ``variable=value``
    (never our own group; nothing where ``/proc`` is missing)."""
    needle = f"{variable}={value}".encode()
    try:
        pids = [entry.name for entry in os.scandir(proc) if entry.name.isdigit()]
    except OSError:
        return set()
    groups: set[int] = set()
    for pid in pids:
        with contextlib.suppress(OSError):  # gone, or not ours to read
            if needle in (proc / pid / "environ").read_bytes().split(b"\0"):
                groups.add(os.getpgid(int(pid)))
    groups.discard(os.getpgid(0))
    return groups


def kill_groups_with(variable: str, value: str) -> int:
    """SIGKILL every process group holding a process marked ``variable=value``; return how many."""
    groups = process_groups_with(variable, value)
    for pgid in groups:
        signal_process_group(pgid, signal.SIGKILL)
    return len(groups)


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
        if self.chunks is None:
            self._keep(idx, data)
        else:
            self.chunks.append((idx, data))
            if self.sizes[idx] > self.cap:
                self._start_spill()
        if self.on_output is not None:
            self._emit(idx, self.decoders[idx].decode(data))

    def _keep(self, idx: int, data: bytes) -> None:
        if self.spill is not None:
            self.spill.write(data)
        self.parts[idx].feed(data)

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
        chunks, self.chunks = self.chunks or [], None
        for idx, data in chunks:
            self._keep(idx, data)

    def result(self, exit_code: int, timed_out: bool, start: float, started: bool = True) -> ExecResult:
        """The ``ExecResult`` of the command started at ``start``; flushes pending callback text."""
        for idx in range(len(_STREAMS)):
            self._emit(idx, self.decoders[idx].decode(b"", final=True))
        full_path = None
        if self.chunks is not None:
            stdout, stderr = (b"".join(data for i, data in self.chunks if i == idx).decode("utf-8", "replace")
                              for idx in range(len(_STREAMS)))
        else:
            if self.spill is not None:
                self.spill.close()
                full_path = self.spill_path
            stdout, stderr = self.parts[0].render(), self.parts[1].render()
        return ExecResult(stdout=stdout, stderr=stderr, exit_code=exit_code, timed_out=timed_out,
                          duration_ms=_elapsed_ms(start), stdout_bytes=self.sizes[0],
                          stderr_bytes=self.sizes[1], full_output_path=full_path, started=started)

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


class _Supervisor:
    """Decides when a command is over, as callbacks on the event loop (one await per command).

    Over means: the process exited and both pipes reached end of file; or the process
    exited and the pipes stayed open ``DRAIN_TIMEOUT_S`` longer (the group is then
    SIGKILLed); or a SIGKILLed process could not be reaped within ``REAP_TIMEOUT_S``.
    The deadline sends SIGTERM, and SIGKILL ``kill_grace_s`` later if it is still alive.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, pgid: int, kill_grace_s: float) -> None:
        self.loop = loop
        self.pgid = pgid
        self.kill_grace_s = kill_grace_s
        self.finished: asyncio.Future[None] = loop.create_future()
        self.open_streams = 2
        self.exited = False
        self.exit_seen = asyncio.Event()
        self.timed_out = False
        self.timers: list[asyncio.TimerHandle] = []

    def _later(self, seconds: float, callback: Callable[[], None]) -> None:
        self.timers.append(self.loop.call_later(seconds, callback))

    def _finish(self) -> None:
        if not self.finished.done():
            self.finished.set_result(None)

    def stream_closed(self) -> None:
        self.open_streams -= 1
        if self.exited and self.open_streams == 0:
            self._finish()

    def process_exited(self) -> None:
        if self.exited:
            return
        self.exited = True
        self.exit_seen.set()
        if self.open_streams == 0:
            self._finish()
        else:
            self._later(DRAIN_TIMEOUT_S, self._drain_expired)

    def deadline(self) -> None:
        if self.exited or self.finished.done():
            return
        self.timed_out = True
        signal_process_group(self.pgid, signal.SIGTERM)
        self._later(self.kill_grace_s, self._grace_expired)

    def _grace_expired(self) -> None:
        if not self.exited:
            signal_process_group(self.pgid, signal.SIGKILL)
            self._later(REAP_TIMEOUT_S, self._finish)

    def _drain_expired(self) -> None:
        # Something in the group (a background job) still holds the pipes.
        signal_process_group(self.pgid, signal.SIGKILL)
        self._later(0.1, self._finish)

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()


async def _stop_group(supervisor: _Supervisor) -> None:
    """Appendix B's stop of a cancelled command: SIGTERM to its group, up to the kill grace
    for the leader to exit, then SIGKILL to whatever of the group remains."""
    signal_process_group(supervisor.pgid, signal.SIGTERM)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(supervisor.exit_seen.wait(), supervisor.kill_grace_s)
    finally:  # a second cancel must not leave the group running
        signal_process_group(supervisor.pgid, signal.SIGKILL)


async def run_process(argv: list[str], *, cwd: Path, env: dict[str, str], timeout_ms: int, limits: ExecLimits,
                      on_output: OutputCallback | None = None, running: set[int] | None = None,
                      keep_full_output: bool = True, stdin_data: bytes | None = None) -> ExecResult:
    """Run ``argv`` to completion or timeout and return what it printed (loop spec §4.2, §5.4).

    ``env`` is the complete environment (already filtered, §4.2); stdin is ``/dev/null``, or
    ``stdin_data`` (a hook's event JSON) read from an unlinked temporary file, so a command
    that never reads it cannot block the writer.
    ``on_output`` receives decoded chunks as they arrive. ``running``, when given, holds the
    process-group id while the command runs, so an owner can kill it from elsewhere
    (``signal_process_group``); the command then ends with ``exit_code == -9``.
    ``keep_full_output=False`` skips the spill file (for callers that consume ``on_output``).

    Never raises for a failing or unstartable command (``started`` False and the reason
    in ``stderr``); raises ``CancelledError`` after killing the group when cancelled.
    """
    loop = asyncio.get_running_loop()
    start = time.monotonic()
    marker = f"{_GUARD_TAG}-{uuid.uuid4().hex}"
    env = {**env, PROCESS_MARKER_VARIABLE: marker}
    _start_guard()
    out_r, out_w = _open_pipe()
    err_r, err_w = _open_pipe()
    stdin: int | BinaryIO = subprocess.DEVNULL
    try:
        if stdin_data is not None:
            stdin = tempfile.TemporaryFile()  # closed in finally, once Popen has it
            stdin.write(stdin_data)
            stdin.seek(0)
        # Popen only forks and execs (no waiting); the asyncio subprocess API would add a
        # transport, protocol and watcher per command for nothing we need.
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=stdin,  # noqa: ASYNC220
                                stdout=out_w, stderr=err_w, start_new_session=True)
    except (OSError, ValueError, TypeError) as exc:
        os.close(out_r)
        os.close(err_r)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        why = f"Could not start {argv[0] if argv else 'command'!r} in {cwd}: {reason}"
        return ExecResult(stdout="", stderr=why, exit_code=-1, timed_out=False,
                          duration_ms=_elapsed_ms(start), started=False)
    finally:
        os.close(out_w)
        os.close(err_w)
        if not isinstance(stdin, int):
            stdin.close()

    pgid = proc.pid
    _tell_guard(f"+{pgid}")
    if running is not None:
        running.add(pgid)
    capture = _Capture(limits.memory_cap_bytes, on_output, keep_full_output)
    supervisor = _Supervisor(loop, pgid, limits.kill_grace_ms / 1000)
    open_fds = [out_r, err_r]

    def close_reader(fd: int) -> None:
        if fd in open_fds:
            open_fds.remove(fd)
            loop.remove_reader(fd)
            os.close(fd)
            supervisor.stream_closed()

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

    loop.add_reader(out_r, on_readable, out_r, 0)
    loop.add_reader(err_r, on_readable, err_r, 1)

    pidfd: int | None = None
    waiter: asyncio.Future[int] | None = None
    try:
        pidfd = os.pidfd_open(pgid)
    except (AttributeError, OSError):
        waiter = asyncio.ensure_future(asyncio.to_thread(proc.wait))
        waiter.add_done_callback(lambda _: supervisor.process_exited())
    else:
        fd_of_pid = pidfd

        def on_pidfd_readable() -> None:
            # Level-triggered: stop watching at once or the loop spins until cleanup.
            loop.remove_reader(fd_of_pid)
            supervisor.process_exited()

        loop.add_reader(pidfd, on_pidfd_readable)

    supervisor.timers.append(loop.call_at(loop.time() + timeout_ms / 1000, supervisor.deadline))
    try:
        await supervisor.finished
    except BaseException as exc:
        if isinstance(exc, asyncio.CancelledError):
            await _stop_group(supervisor)
        else:
            signal_process_group(pgid, signal.SIGKILL)
        kill_groups_with(PROCESS_MARKER_VARIABLE, marker)
        capture.discard()
        raise
    finally:
        supervisor.cancel_timers()
        if supervisor.timed_out:  # "stopped with all its child processes": also those that left the group
            kill_groups_with(PROCESS_MARKER_VARIABLE, marker)
        for fd in list(open_fds):
            close_reader(fd)
        if pidfd is not None:
            if not supervisor.exited:
                loop.remove_reader(pidfd)
            os.close(pidfd)
        if running is not None:
            running.discard(pgid)
        proc.poll()
        _tell_guard(f"-{pgid}")

    # Not reaped within REAP_TIMEOUT_S of its SIGKILL (the only way to get here unreaped).
    exit_code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    return capture.result(exit_code, supervisor.timed_out, start)


class Job:
    """A command left running in the background (issue 21): ``shell`` with ``background: true``.

    Same process tree rules as :func:`run_process`: its own session and group, registered
    with the group guard, marked with ``CODELOOP_PROCESS`` so that what left the group
    (``setsid``) is found and killed too. stdout and stderr arrive interleaved on one pipe;
    what was not read yet is kept within ``limits.memory_cap_bytes`` (head and tail). A
    reader thread per job, not the event loop, so a job survives the awaits between tool
    calls without a task of its own."""

    def __init__(self, proc: subprocess.Popen[bytes], marker: str, limits: ExecLimits) -> None:
        self.proc = proc
        self.pgid = proc.pid
        self.marker = marker
        self.limits = limits
        self._unread = _HeadTail(limits.memory_cap_bytes)
        self._lock = threading.Lock()
        self._news = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"codeloop-job-{self.pgid}")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while data := os.read(fd, _READ_SIZE):
            with self._lock:
                self._unread.feed(data)
            self._news.set()
        self.proc.wait()
        self._news.set()

    @property
    def exit_code(self) -> int | None:
        """None while the command runs."""
        return self.proc.poll()

    async def first_output(self, wait_s: float = 1.0) -> str:
        """Wait up to ``wait_s`` for the first output or the exit, then read."""
        await asyncio.to_thread(self._news.wait, wait_s)
        await asyncio.sleep(0.05)  # the rest of a first burst of lines
        return self.read()

    def read(self) -> str:
        """What the command printed since the last read (head and tail past the cap)."""
        with self._lock:
            unread, self._unread = self._unread, _HeadTail(self.limits.memory_cap_bytes)
            self._news.clear()
        return unread.render()

    async def write(self, text: str, close: bool = False) -> None:
        """Send ``text`` to the command's stdin (then end it when ``close``); raises
        BrokenPipeError when the command no longer reads its input."""
        stdin = self.proc.stdin
        if stdin is None or stdin.closed:
            raise BrokenPipeError("its input was closed")

        def send() -> None:
            if text:
                stdin.write(text.encode())
                stdin.flush()
            if close:
                stdin.close()

        await asyncio.to_thread(send)

    async def stop(self) -> int:
        """SIGTERM to the group, up to ``limits.kill_grace_ms`` to exit, then SIGKILL to
        the group and to every process that left it; return the exit code."""
        if self.proc.poll() is None:
            signal_process_group(self.pgid, signal.SIGTERM)
            deadline = time.monotonic() + self.limits.kill_grace_ms / 1000
            while self.proc.poll() is None and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        self.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(self.proc.wait, REAP_TIMEOUT_S)
        # Its last output: every writer of the pipe is dead now, so the reader sees its end.
        await asyncio.to_thread(self._reader.join, REAP_TIMEOUT_S)
        return self.proc.returncode if self.proc.returncode is not None else -signal.SIGKILL

    def kill(self) -> None:
        """SIGKILL everything the command started, at once (the session is ending)."""
        if self.proc.returncode is None:  # once reaped, the group id may belong to another
            signal_process_group(self.pgid, signal.SIGKILL)
        kill_groups_with(PROCESS_MARKER_VARIABLE, self.marker)
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        _tell_guard(f"-{self.pgid}")


def start_job(argv: list[str], *, cwd: Path, env: dict[str, str], limits: ExecLimits) -> Job:
    """Start ``argv`` as a background :class:`Job`; raises OSError when it cannot start."""
    marker = f"{_GUARD_TAG}-{uuid.uuid4().hex}"
    _start_guard()
    proc = subprocess.Popen(argv, cwd=cwd, env={**env, PROCESS_MARKER_VARIABLE: marker}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    _tell_guard(f"+{proc.pid}")
    return Job(proc, marker, limits)
