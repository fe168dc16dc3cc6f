"""The seccomp filter every bubblewrap command runs under (issue 22), as a BPF program.

The policy parser can be fooled by spelling; the kernel cannot. Whatever a command line
manages to run, these system calls fail inside the sandbox (EPERM, :data:`DENIED_SYSCALLS`):
namespaces (``unshare``, ``setns``, ``clone`` with any ``CLONE_NEW*`` flag), mounts (old and
new API), ``ptrace`` and ``process_vm_*`` (reading another process), the kernel keyring,
kernel modules and kexec, ``bpf``, ``io_uring_*``, ``perf_event_open``, ``userfaultfd``.
``clone3`` fails with ENOSYS: its flags sit in memory a filter cannot read, and ENOSYS makes
glibc fall back to ``clone``, whose flags the filter checks. Every non-native ABI (i386
``int 0x80`` and x32 on x86-64) kills the process.

Why libseccomp's own Python bindings (the ``seccomp`` module of Debian/Ubuntu
``python3-seccomp``, Fedora ``python3-libseccomp``): they are the upstream project's, kept
in step with the kernel's syscall tables for every architecture and patched by the
distributions' security teams. The PyPI alternatives are a ctypes re-implementation last
released in 2021 (``pyseccomp``) and a one-person repackaging (``mephi42-seccomp``);
writing the BPF by hand would copy libseccomp's per-architecture tables. The bindings are
compiled for the system Python, so when the running interpreter (a virtualenv) cannot
import them, this file is run as a script by the system ``python3``, which prints the BPF
program; it therefore imports nothing from codeloop. ``scripts/system-deps`` installs the
package.
"""

from __future__ import annotations

import errno
import functools
import importlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from types import ModuleType

DENIED_SYSCALLS: tuple[str, ...] = (
    "unshare", "setns",
    "mount", "umount2", "pivot_root", "chroot",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "keyctl", "add_key", "request_key",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "bpf", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "perf_event_open", "userfaultfd",
)
"""System calls refused with EPERM (names unknown to an architecture are skipped)."""

CLONE_NAMESPACE_FLAGS: tuple[int, ...] = (
    0x00000080,  # CLONE_NEWTIME
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)

INSTALL_HINT = (
    "install libseccomp's Python bindings for the system python3 "
    "(Debian/Ubuntu: apt-get install python3-seccomp; Fedora: dnf install python3-libseccomp)"
)


class SeccompUnavailableError(RuntimeError):
    """The filter cannot be built on this machine (the message says how to fix that)."""


def build_bpf(seccomp: ModuleType) -> bytes:
    """The BPF program of the filter, built with the ``seccomp`` module given."""
    refuse = seccomp.ERRNO(errno.EPERM)
    filt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            filt.add_rule(refuse, name)
        except (RuntimeError, ValueError):
            continue  # not a system call on this architecture
    filt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    # s390 passes clone's flags second; every other architecture first.
    flags_arg = 1 if seccomp.system_arch() in (seccomp.Arch.S390, seccomp.Arch.S390X) else 0
    for flag in CLONE_NAMESPACE_FLAGS:
        filt.add_rule(refuse, "clone", seccomp.Arg(flags_arg, seccomp.MASKED_EQ, flag, flag))
    # export_bpf writes to a real file descriptor.
    with tempfile.TemporaryFile() as out:
        filt.export_bpf(out)
        out.seek(0)
        return out.read()


def build_unix_socket_bpf(seccomp: ModuleType) -> bytes:
    """The filter of ``--sandbox off --network off``: only ``socket(AF_UNIX, ...)`` fails
    (EPERM), so a command that sees the host's whole file system still reaches no daemon
    through a socket file (``/run/docker.sock``, ``/tmp/.X11-unix/X0``, an ssh agent).
    ``socketpair`` still works (it reaches nothing outside the command)."""
    filt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    filt.add_rule(seccomp.ERRNO(errno.EPERM), "socket", seccomp.Arg(0, seccomp.EQ, socket.AF_UNIX))
    with tempfile.TemporaryFile() as out:
        filt.export_bpf(out)
        out.seek(0)
        return out.read()


FILTERS = {"sandbox": build_bpf, "unix-sockets": build_unix_socket_bpf}
"""The programs this module builds, by the name its script form takes as argument."""


def _system_pythons() -> list[str]:
    candidates = ("/usr/bin/python3", shutil.which("python3"), "/usr/local/bin/python3")
    return list(dict.fromkeys(c for c in candidates if c and os.path.isfile(c)))


@functools.lru_cache(maxsize=2)
def bpf_program(kind: str = "sandbox") -> bytes:
    """A filter's BPF program (:data:`FILTERS`), built once per process; raises
    ``SeccompUnavailableError``."""
    try:
        return FILTERS[kind](importlib.import_module("seccomp"))
    except ImportError:
        pass
    failures: list[str] = []
    for python in _system_pythons():
        try:
            done = subprocess.run(
                [python, "-I", os.path.abspath(__file__), kind], capture_output=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            failures.append(f"{python}: {exc}")
            continue
        if done.returncode == 0 and done.stdout and len(done.stdout) % 8 == 0:
            return done.stdout
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        failures.append(f"{python}: {detail[-1] if detail else f'exit {done.returncode}'}")
    tried = "; ".join(failures) or "no python3 found"
    raise SeccompUnavailableError(f"the seccomp filter cannot be built ({tried}); {INSTALL_HINT}")


if __name__ == "__main__":
    sys.stdout.buffer.write(FILTERS[sys.argv[1] if len(sys.argv) > 1 else "sandbox"](importlib.import_module("seccomp")))
