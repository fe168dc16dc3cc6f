"""``SandboxedExecutionEnvironment``: every tool inside a bubblewrap sandbox (loop spec §4.3, §8).

Modes (the names codex uses):

- ``read-only``: commands see the system's toolchain and the workspace, all read-only;
  only a private, empty ``/tmp`` is writable. File tools refuse every write *before* it
  touches the disk (``WriteDeniedError``).
- ``workspace-write``: as ``read-only``, but the workspace is mounted read-write.
  What the host runs later stays as it was (:mod:`~codeloop.environments.host_guard`):
  git's configuration and hooks, ``.envrc``, ``.vscode/``, ``.idea/``, ``.devcontainer/``,
  ``.codeloop/`` are read-only, the ``.git`` entry cannot be replaced, and a repository
  created during the session that would make the host's git run a program is moved aside.
- ``off``: no sandbox. With ``network=True`` commands run as in a plain
  ``LocalExecutionEnvironment``; with ``network=False`` each still runs in bubblewrap, with
  the whole file system writable, only the network namespace new and ``socket(AF_UNIX)``
  refused (so host daemons' socket files are out of reach too), so "network off" holds in
  every mode. ``full`` is the old name of ``off`` (accepted with a warning: it read as
  "fully sandboxed").

What a command sees is an allow-list on an empty, read-only root, never the host's ``/``:
``/usr`` and the ``/bin``, ``/lib*`` links (``SYSTEM_PATHS``), the ``/etc`` entries
toolchains need (``ETC_ENTRIES``), the user's toolchains (``toolchain_dirs``: what ``PATH``
and variables such as ``PYENV_ROOT`` name), an empty read-only ``$HOME``, fresh ``/dev``,
``/proc`` and ``/tmp``, and the workspace (with, when it is a linked git worktree, the
repository's git directory that its ``.git`` file points to: read-only, and writable only
where a commit writes, see :func:`~codeloop.environments.worktrees.git_mounts`). Other workspaces, the rest of the home
directory and server data directories are not there at all.

Hardening (issue 22; the sandbox is the security boundary, whatever the command policy
misses): no capabilities (``--cap-drop ALL``), no new privileges (bwrap always sets
``PR_SET_NO_NEW_PRIVS``), no further user namespaces (``--unshare-user --disable-userns``
where bubblewrap is 0.8 or newer), and the seccomp filter of
:mod:`codeloop.environments.seccomp_filter` (namespaces, mounts, ptrace, keyring,
modules, bpf, io_uring, clone3, non-native ABIs), given to ``bwrap --seccomp FD``.

``network=False`` (the default) gives each command a new, empty network namespace
(``--unshare-net``): no route anywhere, loopback of the host included.

Every command also gets a new PID namespace whose init dies with its parent
(``--unshare-pid --die-with-parent``): when the command ends, or the runner kills its
process group on a timeout or an abort, bubblewrap dies and the kernel kills *everything*
left in the namespace, including processes that called ``setsid`` or daemonized.
``--new-session`` stops a command from injecting keystrokes into the calling terminal.

Secrets inside what is mounted: the paths in ``hidden_paths`` (by default the usual
credential stores: ``~/.ssh``, ``~/.aws``, ``/etc/ssl/private``, ``~/.cargo/credentials``,
...) are covered by empty tmpfs mounts, and files by ``/dev/null``; add your own.

Never silently unsandboxed: ``initialize()`` (and the first command, if you skip it) runs
a probe of the hardened sandbox; when ``bwrap`` is missing, user namespaces are off or
the seccomp filter cannot be built, it raises ``SandboxUnavailableError`` saying how to
fix that.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import fnmatch
import functools
import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from codeloop.environments import host_guard
from codeloop.environments.base import EnvPolicy, ExecLimits, ExecResult, OutputCallback
from codeloop.environments.errors import SandboxUnavailableError, WorkspaceError, WriteDeniedError
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.environments.resolver import is_within
from codeloop.environments.runner import Job
from codeloop.environments.seccomp_filter import SeccompUnavailableError, bpf_program
from codeloop.environments.worktrees import git_mounts

SandboxMode = Literal["read-only", "workspace-write", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "off")
DEPRECATED_MODES = {"full": "off"}
"""Old names still accepted (with :data:`FULL_DEPRECATED`), and what they mean now."""
FULL_DEPRECATED = ("--sandbox full is deprecated: it means NO sandbox (commands run with your permissions); "
                   "it is now called --sandbox off (sandbox = \"off\" in config.toml)")

DEFAULT_HIDDEN_PATHS: tuple[str, ...] = (
    "~/.ssh", "~/.aws", "~/.azure", "~/.gnupg", "~/.docker", "~/.kube", "~/.netrc", "~/.git-credentials",
    "~/.pgpass", "~/.npmrc", "~/.pypirc", "~/.config/gcloud", "~/.config/gh", "~/.config/codeloop",
    "~/.local/state/codeloop", "~/.cargo/credentials", "~/.cargo/credentials.toml", "/etc/shadow",
    "/etc/gshadow", "/etc/ssh", "/etc/ssl/private",
)
"""Credential stores hidden from sandboxed commands unless they are inside the workspace
(most lie outside what is mounted at all; these cover the ones inside mounted toolchains)."""

SYSTEM_PATHS: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""System toolchain directories mounted read-only (a symbolic link is recreated as one)."""

ETC_ENTRIES: tuple[str, ...] = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf",
    "hosts", "hostname", "resolv.conf", "host.conf", "gai.conf", "services", "protocols", "networks",
    "localtime", "timezone", "locale.alias", "locale.conf", "ssl", "ca-certificates", "ca-certificates.conf",
    "pki", "crypto-policies", "mime.types", "magic", "magic.mime", "os-release", "debian_version",
    "lsb-release", "redhat-release", "bash.bashrc", "bashrc", "profile", "profile.d", "inputrc",
    "environment", "gitconfig", "terminfo", "manpath.config", "python3*", "perl", "java-*", "jvm",
    "maven", "fonts", "ImageMagick-*", "mke2fs.conf",
)
"""``/etc`` entries mounted read-only (fnmatch patterns): what toolchains, name lookup and
TLS need. Not the rest: ``/etc`` also holds service configurations with passwords, and
``npmrc``/``pip.conf`` may hold registry tokens."""

TOOLCHAIN_VARIABLES: tuple[str, ...] = (
    "PYENV_ROOT", "VIRTUAL_ENV", "CONDA_PREFIX", "POETRY_HOME", "GOROOT", "GOMODCACHE", "CARGO_HOME",
    "RUSTUP_HOME", "NVM_DIR", "PNPM_HOME", "BUN_INSTALL", "DENO_DIR", "NODE_PATH", "JAVA_HOME",
    "GRADLE_HOME", "MAVEN_HOME", "M2_HOME", "GEM_HOME", "GEM_PATH", "RBENV_ROOT", "DOTNET_ROOT",
    "ANDROID_HOME", "ANDROID_SDK_ROOT", "FLUTTER_ROOT",
)
"""Host variables naming toolchain directories that commands get to see (read-only)."""

log = logging.getLogger(__name__)

_SECCOMP_FD = 9
"""The descriptor bwrap reads the filter from (a single digit: ``sh`` redirects 0-9 only)."""

PROTECTED_WRITE = "it is what the host runs or reads settings from (git's configuration and hooks, .envrc, " \
    "editor and dev-container settings, .codeloop/), which a sandboxed session may not change"
"""Why a file tool may not write a protected path in ``workspace-write``."""

INSTALL_BWRAP = (
    "install bubblewrap and libseccomp's Python bindings (Debian/Ubuntu: apt-get install bubblewrap "
    "python3-seccomp; Fedora: dnf install bubblewrap python3-libseccomp) "
    "and make sure unprivileged user namespaces are enabled "
    "(sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ "
    "sysctl kernel.apparmor_restrict_unprivileged_userns=0)"
)
"""How to make bubblewrap work here (the end of every refusal and warning about it)."""


def sandbox_refusal(mode: SandboxMode, why: str) -> str:
    """What to tell the user when ``mode`` (with the network off, for ``off``) needs
    bubblewrap and ``why`` it cannot run: the flag at stake and both ways out."""
    if mode == "off":
        return (f"--network off needs bubblewrap, which cannot run here ({why}): {INSTALL_BWRAP}; "
                "or pass --network on to let commands use the network")
    return (f"--sandbox {mode} needs bubblewrap, which cannot run here ({why}): {INSTALL_BWRAP}; "
            "or pass --sandbox off to run without a sandbox")


def is_protected_path(root: str | Path, target: str | Path, state: host_guard.GuardState | None = None) -> bool:
    """True when ``target`` (resolved, inside ``root``) is something the host runs or reads
    settings from: a top-level ``.envrc``, ``.vscode``, ``.idea``, ``.devcontainer`` or
    ``.codeloop`` entry, anything in a ``.git`` entry at any depth, or in a git directory or
    hooks directory that :func:`host_guard.scan` found."""
    real_root = os.path.realpath(root)
    target = os.path.abspath(target)
    if not is_within(target, real_root):
        return False
    parts = os.path.relpath(target, real_root).split(os.sep)
    if parts[0] in host_guard.PROTECTED_NAMES or ".git" in parts:
        return True
    if state is None:
        return False
    return any(is_within(target, d) for d in (*state.git_dirs, *state.hook_dirs))


def find_bwrap() -> str | None:
    """Path of the ``bwrap`` executable, or None."""
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=8)
def _supports_disable_userns(bwrap: str) -> bool:
    """``--disable-userns`` came with bubblewrap 0.8.0; older ones reject it."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--disable-userns" in done.stdout + done.stderr


@functools.lru_cache(maxsize=8)
def supports_overlay(bwrap: str) -> bool:
    """``--overlay-src``/``--overlay`` came with bubblewrap 0.10.0 (the scratch workspace needs them)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--overlay-src" in done.stdout + done.stderr


def _hardening_args(bwrap: str, seccomp_fd: int) -> list[str]:
    """Privilege arguments of every sandboxed command (module docstring, "Hardening")."""
    args = ["--cap-drop", "ALL", "--seccomp", str(seccomp_fd)]
    if _supports_disable_userns(bwrap):
        # bwrap only enforces it inside a user namespace of its own.
        args = ["--unshare-user", "--disable-userns", *args]
    return args


@functools.lru_cache(maxsize=2)
def _seccomp_file(kind: str = "sandbox") -> str:
    """A private file holding a filter's BPF program, opened anew by each command."""
    directory = tempfile.mkdtemp(prefix="codeloop-seccomp-")
    path = os.path.join(directory, "filter.bpf")
    with open(path, "wb") as out:
        out.write(bpf_program(kind))
    os.chmod(path, 0o400)
    atexit.register(shutil.rmtree, directory, True)
    return path


def _with_seccomp(argv: list[str], kind: str = "sandbox") -> list[str]:
    """Start ``argv`` (a bwrap command line) with the filter open on ``_SECCOMP_FD``.

    The runner closes every inherited descriptor, so a tiny ``sh`` opens the file and
    ``exec``s bwrap in its place (same process, nothing left behind); bwrap reads and
    closes it before the command starts."""
    path = _seccomp_file(kind)
    if not os.path.exists(path):  # a temp cleaner removed it
        _seccomp_file.cache_clear()
        path = _seccomp_file(kind)
    return ["/bin/sh", "-c", f'exec "$@" {_SECCOMP_FD}<"$0"', path, *argv]


def probe_bwrap(bwrap: str | None = None) -> str | None:
    """Run a trivial hardened sandbox; None when it works, else the reason it does not."""
    exe = bwrap or find_bwrap()
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        argv = _with_seccomp(
            [exe, "--ro-bind", "/", "/", *_hardening_args(exe, _SECCOMP_FD),
             "--unshare-pid", "--unshare-net", "--die-with-parent", "/bin/true"]
        )
    except SeccompUnavailableError as exc:
        return str(exc)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not run: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip()
        return f"bwrap cannot create a sandbox here: {detail or f'exit {done.returncode}'}"
    return None


@functools.lru_cache(maxsize=1)
def system_mounts() -> tuple[tuple[str, str | None], ...]:
    """``(path, symlink target or None)`` of the host's toolchain directories and the
    ``/etc`` entries that programs need (``SYSTEM_PATHS``, ``ETC_ENTRIES``), as present
    when first asked (the layout of ``/usr`` and ``/etc`` does not change under a session)."""
    etc_entry = re.compile("|".join(fnmatch.translate(pattern) for pattern in ETC_ENTRIES))
    found: list[tuple[str, str | None]] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            found.append((path, os.readlink(path)))
        elif os.path.isdir(path):
            found.append((path, None))
    try:
        names = sorted(os.listdir("/etc"))
    except OSError:
        names = []
    for name in names:
        if etc_entry.match(name) and os.path.exists(f"/etc/{name}"):
            found.append((f"/etc/{name}", None))
    return tuple(found)


def toolchain_dirs(environ: Mapping[str, str], workspace: str) -> list[str]:
    """Directories outside the system ones that hold the user's toolchains, mounted
    read-only: each ``PATH`` entry (its prefix when it is a ``bin`` or ``shims`` directory,
    so ``~/.pyenv/shims`` brings ``~/.pyenv``) and the directories named by toolchain
    variables (``PYENV_ROOT``, ``CARGO_HOME``, ``VIRTUAL_ENV``, ``JAVA_HOME``, ...).

    Never the home directory itself, ``/``, a directory holding the workspace or one
    already under a system path."""
    home = os.path.realpath(environ.get("HOME", "/")) if environ.get("HOME") else "/"
    candidates: list[str] = []
    for entry in environ.get("PATH", "").split(":"):
        if not entry.startswith("/"):
            continue
        real = os.path.realpath(entry)
        parent = os.path.dirname(real)
        if os.path.basename(real) in ("bin", "sbin", "shims") and parent not in (home, "/", f"{home}/.local"):
            real = parent
        candidates.append(real)
    for name in TOOLCHAIN_VARIABLES:
        candidates += [os.path.realpath(v) for v in environ.get(name, "").split(":") if v.startswith("/")]
    if any(is_within(c, os.path.join(home, ".cargo")) for c in candidates) and "RUSTUP_HOME" not in environ:
        candidates.append(os.path.join(home, ".rustup"))  # cargo's proxies need rustup's toolchains
    chosen: list[str] = []
    for path in candidates:
        if path in ("/", home) or is_within(workspace, path) or is_within(home, path):
            continue
        if not os.path.isdir(path) or any(is_within(path, above) for above in (*SYSTEM_PATHS, *chosen)):
            continue
        chosen = [c for c in chosen if not is_within(c, path)] + [path]
    return chosen


class SandboxedExecutionEnvironment(LocalExecutionEnvironment):
    """A ``LocalExecutionEnvironment`` whose commands run in bubblewrap and whose file
    tools obey the same mode.

    Example::

        env = SandboxedExecutionEnvironment("/work/repo", mode="workspace-write", network=False)
        await env.initialize()           # raises SandboxUnavailableError if bwrap cannot run
        await env.exec_command("pytest -q")
    """

    def __init__(self, root: str | Path, *, mode: SandboxMode = "workspace-write", network: bool = False,
                 hidden_paths: Sequence[str] = DEFAULT_HIDDEN_PATHS, limits: ExecLimits | None = None,
                 env_policy: EnvPolicy = "inherit-all", shell: str = "/bin/bash") -> None:
        mode = DEPRECATED_MODES.get(mode, mode)  # type: ignore[assignment]
        if mode not in SANDBOX_MODES:
            raise ValueError(f"sandbox mode {mode!r} is not one of {', '.join(SANDBOX_MODES)}")
        super().__init__(root, limits=limits, env_policy=env_policy, shell=shell)
        self.mode: SandboxMode = mode
        self.network = network
        self.hidden_paths = tuple(hidden_paths)
        self._checked = mode == "off" and network
        self._bwrap: str | None = None
        self._guard: host_guard.GuardState | None = None
        self._guard_notes: list[str] = []
        self._placeholders: set[str] = set()
        self._jobs: list[Job] = []
        self._user_hooks: str | None = None
        self._changed_since_scan = True
        """False while nothing but the last command (whose state was scanned after it) can have
        changed the workspace: the next command then skips its own walk."""

    @property
    def protects_host_files(self) -> bool:
        """True when commands cannot change what the host runs (:mod:`host_guard`)."""
        return self.mode != "off"

    async def initialize(self) -> None:
        await super().initialize()
        self._ensure_sandbox()

    def _ensure_sandbox(self) -> None:
        if self._checked:
            return
        reason = probe_bwrap()
        if reason is not None:
            raise SandboxUnavailableError(sandbox_refusal(self.mode, reason))
        self._bwrap = find_bwrap()
        if self.mode == "workspace-write":
            self._user_hooks = host_guard.user_hooks_path()
        self._checked = True

    def check_write(self, path: str) -> None:
        if self.mode == "read-only":
            raise WriteDeniedError(
                f"Cannot write {path!r}: the sandbox is read-only. "
                "Ask the user to allow writes (--sandbox workspace-write) if this change is needed.",
                path=path,
            )
        self._changed_since_scan = True  # a file tool may lay out a repository (bare-looking)
        if self.mode == "workspace-write" and self._is_protected(path):
            raise WriteDeniedError(f"Cannot write {path!r}: {PROTECTED_WRITE}. Ask the user to make this "
                                   "change outside codeloop if it is needed.", path=path)
        super().check_write(path)

    def _is_protected(self, path: str) -> bool:
        """``path`` itself (a link is deleted, not followed) or what it leads to is protected."""
        parent, _, name = path.rstrip("/").rpartition("/")
        candidates: list[Path] = []
        with contextlib.suppress(WorkspaceError):
            candidates.append(self.resolve(parent or ".") / name if name not in ("", ".", "..") else self.resolve(path))
        with contextlib.suppress(WorkspaceError):
            candidates.append(self.resolve(path))
        return any(is_protected_path(self.root, c, self._guard) for c in candidates)

    def _hidden_mounts(self, workspace: str, mounted: Sequence[str]) -> list[str]:
        args: list[str] = []
        for raw in self.hidden_paths:
            target = os.path.realpath(os.path.expanduser(raw))
            if not os.path.lexists(target) or not any(is_within(target, m) for m in mounted):
                continue
            # Never hide the workspace itself or anything that contains it.
            if is_within(workspace, target):
                continue
            if os.path.isdir(target):
                args += ["--tmpfs", target]
            else:
                args += ["--ro-bind", "/dev/null", target]
        return args

    def _mounts(self, workspace: str) -> list[str]:
        """The file system a command sees: an allow-list on an empty, read-only root."""
        args = ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        mounted: list[str] = []
        for path, link in system_mounts():
            if link is not None:
                args += ["--symlink", link, path]
            else:
                args += ["--ro-bind", path, path]
                mounted.append(path)
        for path in toolchain_dirs(os.environ, workspace):
            args += ["--ro-bind", path, path]
            mounted.append(path)
        home = os.environ.get("HOME", "")
        home_mounted = any(is_within(home, m) for m in mounted)
        if home.startswith("/") and not home_mounted and not is_within(workspace, home):
            args += ["--dir", home]  # exists, empty and read-only, as a home without secrets
        args += self._hidden_mounts(workspace, mounted)
        # A mounted directory holding the workspace would show its siblings (other
        # tenants' workspaces): cover the branch leading to it with an empty tmpfs.
        for path in mounted:
            if is_within(workspace, path) and workspace != path:
                below = os.path.relpath(workspace, path).split("/", 1)[0]
                args += ["--tmpfs", os.path.join(path, below)]
        return [*args, *self._workspace_mounts(workspace), "--remount-ro", "/"]

    def _workspace_mounts(self, workspace: str) -> list[str]:
        """How the workspace (and a linked worktree's git directory) is mounted."""
        bind = "--bind" if self.mode == "workspace-write" else "--ro-bind"
        mounts = [bind, workspace, workspace, *git_mounts(workspace, self.mode == "workspace-write")]
        if self.mode == "workspace-write":
            mounts += self._guard_before(workspace)
        return mounts

    # What the host runs (host_guard) ----------------------------------------------------

    def _guard_before(self, workspace: str) -> list[str]:
        """Mounts that keep what the host runs read-only; first settles what an earlier
        command or a background job left."""
        if self._guard is not None and not (self._changed_since_scan or self._jobs or self._running):
            now = self._guard
        else:
            now = host_guard.scan(workspace, self._user_hooks)
            if self._guard is not None:
                notes = host_guard.settle(workspace, self._guard, now)
                if notes:
                    self._guard_notes += notes
                    now = host_guard.scan(workspace, self._user_hooks)
        self._guard = now
        self._changed_since_scan = False
        args, placeholders = host_guard.guard_mounts(workspace, now)
        self._placeholders.update(placeholders)
        return args

    def _guard_after(self) -> list[str]:
        """After a command: move aside what it planted, and say so (lines for its output)."""
        if self.mode != "workspace-write" or self._guard is None:
            return []
        workspace = os.path.realpath(self.working_directory())
        now = host_guard.scan(workspace, self._user_hooks)
        notes, self._guard_notes = self._guard_notes + host_guard.settle(workspace, self._guard, now), []
        self._guard = host_guard.scan(workspace, self._user_hooks) if notes else now
        self._jobs = [job for job in self._jobs if job.exit_code is None]
        if not self._running and not self._jobs:
            # Only when no sandbox still has them mounted: removing a mount point detaches
            # the mount in every namespace, and a running command could then create the directory.
            host_guard.remove_placeholders(self._placeholders)
            self._placeholders.clear()
        return notes

    async def exec_command(self, command: str, timeout_ms: int | None = None, working_dir: str | None = None,
                           env_vars: dict[str, str] | None = None,
                           on_output: OutputCallback | None = None) -> ExecResult:
        try:
            result = await super().exec_command(command, timeout_ms, working_dir, env_vars, on_output)
        finally:
            notes = self._guard_after()
        if not notes:
            return result
        text = "\n".join(notes) + "\n"
        if on_output is not None:
            on_output("stderr", text)
        return dataclasses.replace(result, stderr=result.stderr + ("\n" if result.stderr and not
                                                                   result.stderr.endswith("\n") else "") + text)

    def start_job(self, command: str, working_dir: str | None = None) -> Job:
        job = super().start_job(command, working_dir)
        if self.mode == "workspace-write":
            self._jobs.append(job)
            self._changed_since_scan = True
        return job

    async def cleanup(self) -> None:
        await super().cleanup()
        for job in self._jobs:
            if job.exit_code is None:
                job.kill()
        self._jobs = []
        notes = self._guard_after()
        if notes:
            log.warning("%s", "; ".join(notes))

    def build_argv(self, command: str) -> list[str]:
        if self.mode == "off" and self.network:
            return super().build_argv(command)
        self._ensure_sandbox()
        assert self._bwrap is not None
        if self.mode == "off":
            # Full access to everything but the network: same file system, devices and PIDs;
            # the filter refuses socket(AF_UNIX), the host's socket files being reachable.
            return _with_seccomp([self._bwrap, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent",
                                  "--seccomp", str(_SECCOMP_FD), "--", *super().build_argv(command)],
                                 "unix-sockets")
        workspace = os.path.realpath(self.working_directory())
        argv = [self._bwrap, *self._mounts(workspace), *_hardening_args(self._bwrap, _SECCOMP_FD)]
        argv += ["--unshare-pid", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-uts"]
        if not self.network:
            argv.append("--unshare-net")
        # No --chdir: bwrap keeps the caller's working directory (the command's
        # working_dir inside the workspace), which exists inside the sandbox too.
        argv += ["--", *super().build_argv(command)]
        return _with_seccomp(argv)
