"""``SSHExecutionEnvironment``: the environment Protocol over SSH (loop spec §4.3).

Commands run through the remote user's ``/bin/bash`` in the remote working directory,
each in its own process group (``set -m`` job control), so a timeout or an abort kills
the whole remote tree: SIGTERM to the group, the grace period, then SIGKILL, exactly as
the local runner does. Output is read while it streams and capped with the same
head/tail-plus-spill-file capture as local commands.

Files go over SFTP. Every path is judged by the remote host itself: the joined path is
canonicalised with GNU ``realpath -m`` (symlinks followed as the kernel would, missing
components allowed) and must stay inside the remote root; the syntax checks (NUL, length)
are the local resolver's. Writes upload to a temporary name in the same directory and
rename over the target, so a broken connection never leaves a half-written file.

Security: host keys are checked against ``known_hosts`` (``~/.ssh/known_hosts`` by
default); turning that off needs ``known_hosts=None`` *and* ``insecure_no_host_check=True``.
Local secrets never cross: nothing of the local environment is forwarded, and
``env_vars`` are filtered like local ones (§4.2).

Requirements on the remote host: ``bash``, GNU coreutils (``realpath -m``), and for
``grep``/``glob`` either ``python3`` (the same pure-Python search as the local fallback)
or ``rg``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import io
import json
import posixpath
import shlex
import signal
import stat
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codeloop.environments.base import DirEntry, ExecLimits, ExecResult, FileStat, GrepOptions, OutputCallback
from codeloop.environments.envfilter import is_secret_name
from codeloop.environments.errors import (
    FileNotFoundInWorkspaceError,
    InvalidPatternError,
    IsAFileError,
    NotAFileError,
    PathOutsideWorkspaceError,
    PermissionDeniedError,
    WorkspaceError,
)
from codeloop.environments.local import decode_text, slice_lines
from codeloop.environments.patterns import workspace_glob_pattern
from codeloop.environments.resolver import check_path_syntax, is_within
from codeloop.environments.runner import DRAIN_TIMEOUT_S, _Capture
from codeloop.environments.safe_open import MAX_READ_BYTES, hardlink_refusal, too_large_refusal

try:  # asyncssh is the [ssh] extra.
    import asyncssh
except ImportError:  # pragma: no cover - exercised only without the extra
    asyncssh = None  # type: ignore[assignment]

_READ_SIZE = 1 << 16
_START_LINE = "codeloop-remote-command-started"
_BUNDLED = ("atomic", "base", "errors", "patterns", "resolver", "safe_open", "walk", "runner", "search", "remote_search")


def _exit_signal(exit_signal: Any) -> int:
    """The number of the signal that ended a remote process (asyncssh's ``exit_signal`` is
    ``(name, core_dumped, message, language)``); SIGKILL when the name is unknown or the
    connection ended without saying (the process is gone either way)."""
    name = exit_signal[0] if isinstance(exit_signal, tuple) and exit_signal else ""
    try:
        return int(signal.Signals[f"SIG{name}"])
    except KeyError:
        return int(signal.SIGKILL)


_q = shlex.quote


class SSHExecutionEnvironment:
    """Run tools on a remote host over SSH (key auth, host keys checked by default).

    Example::

        env = SSHExecutionEnvironment("build.example.com", "/srv/work/repo",
                                      username="ci", client_keys=["~/.ssh/id_ed25519"])
        await env.initialize()
        result = await env.exec_command("make test", timeout_ms=60_000)
    """

    files_elsewhere = True
    """Its files are on the remote host, out of reach of what reads this machine's disk (the
    session's snapshots: a changing call is marked uncovered, docs/sessions.md)."""

    def __init__(self, host: str, root: str, *, port: int = 22, username: str | None = None,
                 client_keys: list[str] | None = None, known_hosts: str | None = "~/.ssh/known_hosts",
                 insecure_no_host_check: bool = False, limits: ExecLimits | None = None,
                 connect_timeout_s: float = 15.0) -> None:
        if known_hosts is None and not insecure_no_host_check:
            raise ValueError("known_hosts=None turns off host key checking; pass insecure_no_host_check=True "
                             "to confirm, or give the path of a known_hosts file")
        if not root.startswith("/"):
            raise ValueError(f"root {root!r} must be an absolute path on the remote host")
        self.host = host
        self.port = port
        self.username = username
        self.client_keys = [str(Path(k).expanduser()) for k in client_keys] if client_keys else None
        self.known_hosts = str(Path(known_hosts).expanduser()) if known_hosts else None
        self.limits = limits or ExecLimits()
        self.connect_timeout_s = connect_timeout_s
        self._root = posixpath.normpath(root)
        self._conn: Any = None
        self._sftp: Any = None
        self._running: set[str] = set()
        self._os_version = ""
        self._bundle: str | None = None
        self._last_links = 0
        self.allow_hardlinks = False
        """Read files with several hard links (see ``codeloop.environments.safe_open``)."""

    # -- lifecycle -----------------------------------------------------------------
    async def initialize(self) -> None:
        """Connect, open SFTP, create the remote root and learn its canonical path."""
        if asyncssh is None:
            raise WorkspaceError("SSH support needs the 'ssh' extra: pip install 'codeloop[ssh]'")
        if self._conn is not None:
            return
        try:
            connecting = asyncssh.connect(self.host, port=self.port, username=self.username,
                                          client_keys=self.client_keys, known_hosts=self.known_hosts,
                                          agent_path=None)
            self._conn = await asyncio.wait_for(connecting, self.connect_timeout_s)
        except asyncssh.HostKeyNotVerifiable as exc:
            raise WorkspaceError(
                f"Host key of {self.host}:{self.port} is not in {self.known_hosts}: {exc}. "
                f"Add it (ssh-keyscan -p {self.port} {self.host} >> {self.known_hosts}) after checking it."
            ) from None
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            raise WorkspaceError(f"Cannot connect to {self.host}:{self.port} over SSH: {exc}") from None
        self._sftp = await self._conn.start_sftp_client()
        made = await self._conn.run(f"mkdir -p -- {_q(self._root)} && realpath -- {_q(self._root)}; uname -sr")
        lines = str(made.stdout or "").splitlines()
        if made.exit_status != 0 or not lines:
            raise WorkspaceError(f"Cannot create the remote workspace {self._root}: {made.stderr}")
        self._root = lines[0].strip()
        self._os_version = lines[1].strip() if len(lines) > 1 else ""

    async def cleanup(self) -> None:
        """Kill remote commands still running and close the connection."""
        if self._conn is None:
            return
        for pidfile in list(self._running):
            with contextlib.suppress(Exception):
                await self._signal_group(pidfile, signal.SIGKILL)
        with contextlib.suppress(Exception):
            if self._sftp is not None:
                self._sftp.exit()
        self._conn.close()
        with contextlib.suppress(Exception):
            await self._conn.wait_closed()
        self._conn = None
        self._sftp = None
        self._bundle = None

    def working_directory(self) -> str:
        return self._root

    def platform(self) -> str:
        return self._os_version.split(" ")[0].lower() or "linux"

    def os_version(self) -> str:
        return self._os_version

    # -- paths -----------------------------------------------------------------------
    def _require(self) -> Any:
        if self._conn is None or self._sftp is None:
            raise WorkspaceError("SSH environment is not connected; call initialize() first")
        return self._sftp

    async def _resolve(self, path: str, *, must_exist: bool = False) -> str:
        check_path_syntax(path)
        self._require()
        joined = path if path.startswith("/") else posixpath.join(self._root, path or ".")
        # One round trip: the canonical path, then (for hard-link checks) its link count.
        res = await self._conn.run(
            f"p=$(realpath -m -- {_q(joined)}) && printf '%s\\n' \"$p\" && (stat -c %h -- \"$p\" 2>/dev/null || true)"
        )
        lines = str(res.stdout or "").split("\n")
        resolved = lines[0].strip()
        self._last_links = int(lines[1]) if len(lines) > 1 and lines[1].strip().isdigit() else 0
        if res.exit_status != 0 or not resolved:
            raise PathOutsideWorkspaceError(f"Path {path!r} cannot be resolved on {self.host}: {res.stderr}", path=path)
        if not is_within(resolved, self._root):
            raise PathOutsideWorkspaceError(
                f"Path {path!r} is outside the workspace {self._root} (it resolves to {resolved}); "
                "use a path relative to the workspace root",
                path=path,
            )
        if must_exist and not await self._sftp.exists(resolved):
            raise FileNotFoundInWorkspaceError(
                f"No such file or directory: {path!r} in the workspace {self._root}; "
                "check the path (list the directory to see what exists)",
                path=path,
            )
        return resolved

    @contextlib.contextmanager
    def _sftp_errors(self, path: str) -> Iterator[None]:
        """SFTP failures as ``WorkspaceError``s naming ``path``."""
        try:
            yield
        except asyncssh.SFTPError as exc:
            if exc.code == asyncssh.FX_NO_SUCH_FILE:
                raise FileNotFoundInWorkspaceError(f"No such file or directory: {path!r}", path) from None
            if exc.code == asyncssh.FX_PERMISSION_DENIED:
                raise PermissionDeniedError(f"Permission denied: {path!r} on {self.host}", path) from None
            raise WorkspaceError(f"SFTP error on {path!r}: {exc}", path) from None

    # -- files -------------------------------------------------------------------------
    async def read_bytes(self, path: str) -> bytes:
        sftp = self._require()
        target = await self._resolve(path, must_exist=True)
        links = self._last_links
        if await sftp.isdir(target):
            raise NotAFileError(f"{path!r} is a directory, not a file; list it with list_dir instead", path=path)
        if links > 1 and not self.allow_hardlinks:
            raise hardlink_refusal(path, links)
        with self._sftp_errors(path):
            size = (await sftp.stat(target)).size or 0
            if size > MAX_READ_BYTES:
                raise too_large_refusal(path, size, MAX_READ_BYTES)
            async with sftp.open(target, "rb") as handle:
                data: bytes = await handle.read(MAX_READ_BYTES + 1)
        if len(data) > MAX_READ_BYTES:
            raise too_large_refusal(path, len(data), MAX_READ_BYTES, grew=True)
        return data

    async def read_file(self, path: str, offset: int | None = None, limit: int | None = None) -> str:
        return slice_lines(decode_text(await self.read_bytes(path), path), offset, limit)

    async def write_file(self, path: str, content: str | bytes) -> int:
        sftp = self._require()
        target = await self._resolve(path)
        data = content.encode("utf-8") if isinstance(content, str) else content
        if await sftp.isdir(target):
            raise NotAFileError(f"{path!r} is a directory; choose a file path", path=path)
        parent = posixpath.dirname(target)
        temp = posixpath.join(parent, f".codeloop-{uuid.uuid4().hex}.tmp")
        with self._sftp_errors(path):
            try:
                await sftp.makedirs(parent, exist_ok=True)
                async with sftp.open(temp, "wb") as handle:
                    await handle.write(data)
                await sftp.posix_rename(temp, target)
            except asyncssh.SFTPError:
                with contextlib.suppress(Exception):
                    await sftp.remove(temp)
                raise
        return len(data)

    async def delete_file(self, path: str) -> None:
        sftp = self._require()
        check_path_syntax(path)
        parent, _, name = path.rstrip("/").rpartition("/")
        if name in ("", ".", ".."):
            target = await self._resolve(path, must_exist=True)
        else:
            # The entry itself, not what a symlink at it points to: deleting a link removes the link.
            target = posixpath.join(await self._resolve(parent or "."), name)
        with self._sftp_errors(path):
            if stat.S_ISDIR((await sftp.lstat(target)).permissions or 0):
                raise NotAFileError(f"Cannot delete {path!r}: it is a directory", path=path)
            await sftp.remove(target)

    async def file_exists(self, path: str) -> bool:
        try:
            target = await self._resolve(path)
        except WorkspaceError:
            return False
        return bool(await self._require().exists(target))

    async def stat(self, path: str) -> FileStat:
        sftp = self._require()
        target = await self._resolve(path, must_exist=True)
        attrs = await sftp.stat(target)
        return FileStat(path=posixpath.relpath(target, self._root), is_dir=stat.S_ISDIR(attrs.permissions or 0),
                        size=int(attrs.size or 0), mtime=float(attrs.mtime or 0))

    async def list_directory(self, path: str = ".", depth: int = 1) -> list[DirEntry]:
        sftp = self._require()
        base = await self._resolve(path, must_exist=True)
        if not await sftp.isdir(base):
            raise IsAFileError(f"{path!r} is a file, not a directory", path=path)
        entries: list[DirEntry] = []

        async def walk(directory: str, prefix: str, level: int) -> None:
            for item in await sftp.readdir(directory):
                name = item.filename
                if name in (".", ".."):
                    continue
                is_dir = stat.S_ISDIR(item.attrs.permissions or 0)
                rel = f"{prefix}{name}"
                entries.append(DirEntry(name=rel, is_dir=is_dir, size=None if is_dir else int(item.attrs.size or 0)))
                if is_dir and level < depth:
                    await walk(posixpath.join(directory, name), rel + "/", level + 1)

        await walk(base, "", 1)
        return sorted(entries, key=lambda e: e.name)

    # -- commands ------------------------------------------------------------------------
    async def _signal_group(self, pidfile: str, sig: int) -> None:
        await self._conn.run(
            f"p=$(cat {_q(pidfile)} 2>/dev/null) && [ -n \"$p\" ] && kill -{int(sig)} -- -\"$p\" 2>/dev/null; true"
        )

    async def exec_command(self, command: str, timeout_ms: int | None = None, working_dir: str | None = None,
                           env_vars: dict[str, str] | None = None,
                           on_output: OutputCallback | None = None) -> ExecResult:
        self._require()
        start = time.monotonic()
        timeout = min(timeout_ms or self.limits.default_timeout_ms, self.limits.max_timeout_ms)
        cwd = self._root if working_dir in (None, "", ".") else await self._resolve(working_dir, must_exist=True)
        exports = "".join(f"export {k}={_q(v)}; " for k, v in (env_vars or {}).items()
                          if k.isidentifier() and not is_secret_name(k))
        pidfile = f"/tmp/codeloop-{uuid.uuid4().hex}.pgid"
        # set -m puts the command in its own process group whose id is $!, so the whole
        # remote tree can be signalled with kill -- -PGID from a second channel.
        wrapper = (
            f"set -m; cd {_q(cwd)} || exit 126; {exports}"
            # fd 3 is the real stderr; the wrapper's own job notices go to /dev/null. The
            # start line tells the client that the remote shell is up: the timeout counts
            # from there, not from the SSH round trip or the login shell's rc files.
            f"exec 3>&2 2>/dev/null; echo {_START_LINE} >&3; "
            f"/bin/bash --norc --noprofile -c {_q(command)} </dev/null 2>&3 3>&- & echo $! > {_q(pidfile)}; "
            f"wait $!; rc=$?; rm -f {_q(pidfile)}; exit $rc"
        )
        capture = _Capture(self.limits.memory_cap_bytes, on_output)
        process = await self._conn.create_process(f"/bin/bash -c {_q(wrapper)}", encoding=None)
        self._running.add(pidfile)

        started = asyncio.Event()
        remote_shell_up = False

        async def pump(stream: Any, idx: int) -> None:
            nonlocal remote_shell_up
            head = b"" if idx == 1 else None  # stderr's first line may be the start line
            while data := await stream.read(_READ_SIZE):
                if head is not None:
                    head += data
                    if b"\n" not in head:
                        continue
                    first, _, rest = head.partition(b"\n")
                    remote_shell_up = first == _START_LINE.encode()
                    data, head = (rest if remote_shell_up else head), None
                    started.set()
                capture.feed(idx, data)
            started.set()
            if head:
                capture.feed(idx, head)

        readers = [asyncio.ensure_future(pump(process.stdout, 0)), asyncio.ensure_future(pump(process.stderr, 1))]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(started.wait(), self.connect_timeout_s)
        launched = time.monotonic()
        timed_out = False
        try:
            try:
                await asyncio.wait_for(process.wait_closed(), timeout / 1000 - (time.monotonic() - launched))
            except TimeoutError:
                timed_out = True
                await self._signal_group(pidfile, signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait_closed(), self.limits.kill_grace_ms / 1000)
                except TimeoutError:
                    await self._signal_group(pidfile, signal.SIGKILL)
                    process.close()
            _, pending = await asyncio.wait(readers, timeout=DRAIN_TIMEOUT_S)
            for task in pending:
                task.cancel()
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._signal_group(pidfile, signal.SIGKILL))
            process.close()
            capture.discard()
            raise
        finally:
            self._running.discard(pidfile)
            for task in readers:
                if not task.done():
                    task.cancel()
        if timed_out:
            with contextlib.suppress(Exception):
                await self._conn.run(f"rm -f {_q(pidfile)}")
        status = process.exit_status
        exit_code = status if isinstance(status, int) else -_exit_signal(process.exit_signal)
        if timed_out and exit_code > 128:
            exit_code = -(exit_code - 128)
        return capture.result(exit_code, timed_out, start, started=remote_shell_up)

    # -- search ------------------------------------------------------------------------------
    async def _search_bundle(self) -> str:
        """Upload (once per connection) a zip of the search modules; return its remote path."""
        if self._bundle is not None:
            return self._bundle
        here = Path(__file__).parent
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as bundle:
            bundle.writestr("codeloop/__init__.py", "")
            bundle.writestr("codeloop/environments/__init__.py", "")
            for name in _BUNDLED:
                bundle.write(here / f"{name}.py", f"codeloop/environments/{name}.py")
        data = buffer.getvalue()
        remote = f"/tmp/codeloop-search-{hashlib.sha256(data).hexdigest()[:16]}.zip"
        async with self._require().open(remote, "wb") as handle:
            await handle.write(data)
        self._bundle = remote
        return remote

    async def _remote_search(self, op: str, path: str, pattern: str, **extra: Any) -> Any:
        """Run ``remote_search`` on the host for ``op`` below the workspace path ``path``."""
        base = await self._resolve(path, must_exist=True)
        start_rel = posixpath.relpath(base, self._root) if base != self._root else "."
        request = {"op": op, "root": self._root, "start_rel": start_rel, "pattern": pattern, **extra}
        bundle = await self._search_bundle()
        boot = (
            f"import sys; sys.path.insert(0, {bundle!r}); "
            "from codeloop.environments.remote_search import main; main()"
        )
        res = await self._conn.run(f"python3 -c {_q(boot)} {_q(json.dumps(request))}", check=False)
        if res.exit_status == 127:
            raise WorkspaceError(f"grep/glob over SSH need python3 on {self.host}; install it there")
        try:
            answer = json.loads(str(res.stdout or ""))
        except json.JSONDecodeError:
            raise WorkspaceError(f"remote search on {self.host} failed: {str(res.stderr or '')[-2000:]}") from None
        if "error" in answer:
            kinds = {"pattern": InvalidPatternError, "missing": FileNotFoundInWorkspaceError}
            raise kinds.get(answer.get("kind"), WorkspaceError)(answer["error"])
        return answer["result"]

    async def grep(self, pattern: str, path: str = ".", options: GrepOptions | None = None) -> str:
        opts = dataclasses.asdict(options or GrepOptions())
        return str(await self._remote_search("grep", path, pattern, options=opts))

    async def glob(self, pattern: str, path: str = ".") -> list[str]:
        return list(await self._remote_search("glob", path, workspace_glob_pattern(pattern, (self._root,))))
