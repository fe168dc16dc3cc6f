"""``SandboxedExecutionEnvironment``: every tool inside a bubblewrap sandbox (loop spec §4.3, §8).

Modes (the names codex uses):

- ``read-only``: the whole host file system is mounted read-only, the workspace included;
  only a private, empty ``/tmp`` is writable. File tools refuse every write *before* it
  touches the disk (``WriteDeniedError``).
- ``workspace-write``: as ``read-only``, but the workspace is mounted read-write.
- ``full``: no file system sandbox. With ``network=True`` commands run as in a plain
  ``LocalExecutionEnvironment``; with ``network=False`` each still runs in bubblewrap, with
  the whole file system writable and only the network namespace new, so "network off"
  holds in every mode.

``network=False`` (the default) gives each command a new, empty network namespace
(``--unshare-net``): no route anywhere, loopback of the host included.

Every command also gets a new PID namespace whose init dies with its parent
(``--unshare-pid --die-with-parent``): when the runner kills the command's process group
on a timeout or an abort, bubblewrap dies and the kernel kills *everything* left in the
namespace, including processes that called ``setsid`` or daemonized. ``--new-session``
stops a command from injecting keystrokes into the calling terminal.

Secrets outside the workspace: the directories in ``hidden_paths`` (by default the usual
credential stores: ``~/.ssh``, ``~/.aws``, ``~/.gnupg``, ``~/.config/gcloud``, ...) are
covered by empty tmpfs mounts, and files by ``/dev/null``; add your own.

Never silently unsandboxed: ``initialize()`` (and the first command, if you skip it) runs
a probe; when ``bwrap`` is missing or user namespaces are off, it raises
``SandboxUnavailableError`` saying how to fix that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from codeloop.environments.base import EnvPolicy, ExecLimits
from codeloop.environments.errors import SandboxUnavailableError, WriteDeniedError
from codeloop.environments.local import LocalExecutionEnvironment

SandboxMode = Literal["read-only", "workspace-write", "full"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "full")

DEFAULT_HIDDEN_PATHS: tuple[str, ...] = (
    "~/.ssh",
    "~/.aws",
    "~/.azure",
    "~/.gnupg",
    "~/.docker",
    "~/.kube",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pgpass",
    "~/.npmrc",
    "~/.pypirc",
    "~/.config/gcloud",
    "~/.config/gh",
    "~/.config/codeloop",
    "~/.local/state/codeloop",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/ssh",
)
"""Credential stores hidden from sandboxed commands unless they are inside the workspace."""

INSTALL_BWRAP = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap) "
    "and make sure unprivileged user namespaces are enabled "
    "(sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ "
    "sysctl kernel.apparmor_restrict_unprivileged_userns=0)"
)
"""How to make bubblewrap work here (the end of every refusal and warning about it)."""


def sandbox_refusal(mode: SandboxMode, why: str) -> str:
    """What to tell the user when ``mode`` (with the network off, for ``full``) needs
    bubblewrap and ``why`` it cannot run: the flag at stake and both ways out."""
    if mode == "full":
        return (f"--network off needs bubblewrap, which cannot run here ({why}): {INSTALL_BWRAP}; "
                "or pass --network on to let commands use the network")
    return (f"--sandbox {mode} needs bubblewrap, which cannot run here ({why}): {INSTALL_BWRAP}; "
            "or pass --sandbox full to run without a sandbox")


def find_bwrap() -> str | None:
    """Path of the ``bwrap`` executable, or None."""
    return shutil.which("bwrap")


def probe_bwrap(bwrap: str | None = None) -> str | None:
    """Run a trivial sandbox; None when it works, else the reason it does not."""
    exe = bwrap or find_bwrap()
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            [exe, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--die-with-parent", "/bin/true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not run: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip()
        return f"bwrap cannot create a sandbox here: {detail or f'exit {done.returncode}'}"
    return None


class SandboxedExecutionEnvironment(LocalExecutionEnvironment):
    """A ``LocalExecutionEnvironment`` whose commands run in bubblewrap and whose file
    tools obey the same mode.

    Example::

        env = SandboxedExecutionEnvironment("/work/repo", mode="workspace-write", network=False)
        await env.initialize()           # raises SandboxUnavailableError if bwrap cannot run
        await env.exec_command("pytest -q")
    """

    def __init__(
        self,
        root: str | Path,
        *,
        mode: SandboxMode = "workspace-write",
        network: bool = False,
        hidden_paths: Sequence[str] = DEFAULT_HIDDEN_PATHS,
        limits: ExecLimits | None = None,
        env_policy: EnvPolicy = "inherit-all",
        shell: str = "/bin/bash",
    ) -> None:
        if mode not in SANDBOX_MODES:
            raise ValueError(f"sandbox mode {mode!r} is not one of {', '.join(SANDBOX_MODES)}")
        super().__init__(root, limits=limits, env_policy=env_policy, shell=shell)
        self.mode: SandboxMode = mode
        self.network = network
        self.hidden_paths = tuple(hidden_paths)
        self._checked = mode == "full" and network
        self._bwrap: str | None = None

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
        self._checked = True

    def check_write(self, path: str) -> None:
        if self.mode == "read-only":
            raise WriteDeniedError(
                f"Cannot write {path!r}: the sandbox is read-only. "
                "Ask the user to allow writes (--sandbox workspace-write) if this change is needed.",
                path=path,
            )
        super().check_write(path)

    def _hidden_mounts(self, workspace: str) -> list[str]:
        args: list[str] = []
        for raw in self.hidden_paths:
            target = os.path.realpath(os.path.expanduser(raw))
            if not os.path.lexists(target):
                continue
            # Never hide the workspace itself or anything that contains it.
            if workspace == target or workspace.startswith(target.rstrip("/") + "/"):
                continue
            if os.path.isdir(target):
                args += ["--tmpfs", target]
            else:
                args += ["--ro-bind", "/dev/null", target]
        return args

    def build_argv(self, command: str) -> list[str]:
        if self.mode == "full" and self.network:
            return super().build_argv(command)
        self._ensure_sandbox()
        assert self._bwrap is not None
        if self.mode == "full":
            # Full access to everything but the network: same file system, devices and PIDs.
            return [self._bwrap, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--",
                    *super().build_argv(command)]
        workspace = os.path.realpath(self.working_directory())
        argv = [
            self._bwrap,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--tmpfs", "/tmp",
        ]
        argv += self._hidden_mounts(workspace)
        bind = "--bind" if self.mode == "workspace-write" else "--ro-bind"
        argv += [bind, workspace, workspace]
        argv += ["--unshare-pid", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-uts"]
        if not self.network:
            argv.append("--unshare-net")
        # No --chdir: bwrap keeps the caller's working directory (the command's
        # working_dir inside the workspace), which exists inside the sandbox too.
        argv += ["--", *super().build_argv(command)]
        return argv
