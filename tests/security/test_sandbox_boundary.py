"""The bubblewrap sandbox is the security boundary (issue 22, "The sandbox is the security boundary").

Each test runs real commands in the real sandbox and looks from inside: privileges in
``/proc/self/status``, system calls the seccomp filter must refuse, what the file system
shows, and what is left running after a command ends.
"""

from __future__ import annotations

import asyncio
import os
import platform
import uuid
from pathlib import Path

import pytest

from codeloop.environments import ExecResult, sandbox
from codeloop.environments.sandbox import SandboxedExecutionEnvironment


async def _exec(workspace: Path, command: str) -> ExecResult:
    env = SandboxedExecutionEnvironment(workspace, mode="workspace-write")
    await env.initialize()
    return await env.exec_command(command, timeout_ms=30_000)


async def _run(workspace: Path, command: str) -> tuple[int, str]:
    result = await _exec(workspace, command)
    return result.exit_code, result.output


async def test_commands_run_without_privileges_and_under_seccomp(workspace: Path) -> None:
    code, out = await _run(workspace, "grep -E '^(NoNewPrivs|CapEff|CapPrm|CapBnd|Seccomp):' /proc/self/status")
    assert code == 0, out
    fields = dict(line.split(":\t") for line in out.strip().splitlines())
    assert fields["NoNewPrivs"] == "1"
    assert fields["CapEff"] == "0000000000000000"
    assert fields["CapPrm"] == "0000000000000000"
    assert fields["CapBnd"] == "0000000000000000"
    assert fields["Seccomp"] == "2"


@pytest.mark.parametrize(
    "command",
    [
        "unshare -U true",
        "unshare -m true",
        "unshare -n true",
        "unshare -p -f true",
        "mkdir -p /tmp/m && mount -t tmpfs none /tmp/m",
        "mkdir -p /tmp/m && mount --bind /usr /tmp/m",
    ],
)
async def test_namespace_and_mount_commands_fail(workspace: Path, command: str) -> None:
    code, out = await _run(workspace, f"{command} && echo ESCAPED")
    assert code != 0
    assert "ESCAPED" not in out


_X86_64 = {
    "setns": 308, "unshare": 272, "mount": 165, "pivot_root": 155, "ptrace": 101, "keyctl": 250,
    "add_key": 248, "request_key": 249, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "bpf": 321, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "process_vm_readv": 310, "userfaultfd": 323,
}
_SYSCALL_PROBE = (
    "python3 -c \"import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
    "r = libc.syscall({nr}, {args}); print('result', r, ctypes.get_errno())\""
)
needs_x86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall numbers are x86-64's")


@needs_x86_64
@pytest.mark.parametrize("name", sorted(_X86_64))
async def test_refused_system_calls_fail_with_eperm(workspace: Path, name: str) -> None:
    # Arguments that would be valid or at least harmless if the call went through.
    code, out = await _run(workspace, _SYSCALL_PROBE.format(nr=_X86_64[name], args="0, 0, 0, 0, 0"))
    assert code == 0, out
    assert out.strip() == "result -1 1", out  # EPERM from the filter, whatever the kernel would say


@needs_x86_64
async def test_clone3_reports_enosys_so_libc_falls_back_to_clone(workspace: Path) -> None:
    code, out = await _run(workspace, _SYSCALL_PROBE.format(nr=435, args="0, 0"))
    assert out.strip() == "result -1 38", out  # ENOSYS
    code, out = await _run(workspace, "python3 -c 'import os, threading; t = threading.Thread(target=print, "
                                      "args=(\"thread\",)); t.start(); t.join(); print(os.fork() >= 0)'")
    assert code == 0 and "thread" in out and "True" in out, out


@needs_x86_64
@pytest.mark.parametrize("flag", [0x10000000, 0x20000000, 0x40000000, 0x00020000, 0x04000000, 0x08000000])
async def test_clone_with_a_namespace_flag_fails(workspace: Path, flag: int) -> None:
    # clone(flags | SIGCHLD, ...): a child that was created would print "child" and exit.
    probe = _SYSCALL_PROBE.format(nr=56, args=f"{flag | 17}, 0, 0, 0, 0").replace(
        "print(", "r == 0 and (print('child'), sys.stdout.flush(), libc._exit(0)); print("
    )
    _code, out = await _run(workspace, probe)
    assert out.strip() == "result -1 1", out
    assert "child" not in out


@needs_x86_64
async def test_a_non_native_abi_kills_the_process(workspace: Path) -> None:
    # getpid through the x32 ABI (syscall number | 0x40000000) on x86-64.
    code, out = await _run(workspace, _SYSCALL_PROBE.format(nr=0x40000000 | 39, args="0"))
    assert "result" not in out
    assert code != 0


async def test_a_setsid_child_dies_when_the_command_ends(workspace: Path) -> None:
    marker = f"codeloop-setsid-{uuid.uuid4().hex}"
    code, out = await _run(workspace, f"setsid bash -c 'exec -a {marker} sleep 300' > /dev/null 2>&1 & echo started")
    assert code == 0 and "started" in out
    for _ in range(100):  # the kernel kills the namespace's processes as its init exits
        alive = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline_has(pid, marker)]
        if not alive:
            break
        await asyncio.sleep(0.05)
    assert alive == []


def _cmdline_has(pid: str, marker: str) -> bool:
    try:
        return marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


async def test_the_seccomp_descriptor_is_not_left_open_in_the_command(workspace: Path) -> None:
    code, out = await _run(workspace, "ls /proc/self/fd")
    assert code == 0
    assert set(out.split()) <= {"0", "1", "2", "3"}, out  # 3: the directory ls reads


async def test_sibling_directories_and_home_are_not_visible(workspace: Path, tmp_path: Path) -> None:
    sibling = tmp_path / "other-tenant"
    sibling.mkdir()
    (sibling / "data.txt").write_text("OTHER-TENANT-DATA")
    in_home = Path.home() / f"codeloop-probe-{uuid.uuid4().hex}"
    in_home.write_text("HOME-DATA")
    try:
        result = await _exec(
            workspace,
            f"cat {sibling}/data.txt; cat {in_home}; ls -A {tmp_path}; "
            "for d in /var /opt /srv /home /mnt /media /work; do test -e $d && echo VISIBLE $d; done; true",
        )
    finally:
        in_home.unlink()
    assert "OTHER-TENANT-DATA" not in result.output and "HOME-DATA" not in result.output
    assert result.stdout.split() == ["ws"]  # the parent directory holds only the workspace
    assert result.stderr.count("No such file or directory") == 2, result.stderr


async def test_with_only_system_toolchains_home_is_empty_and_read_only(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    for name in sandbox.TOOLCHAIN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    result = await _exec(workspace, 'ls -A "$HOME"; echo x > "$HOME/f"; ls -A /')
    assert result.stderr.strip().endswith("Read-only file system"), result.stderr
    listed = result.stdout.split()
    assert set(listed) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "root", "sbin",
                           "tmp", "usr", "home"}, listed
    assert "etc" in listed and "usr" in listed


async def test_a_workspace_inside_a_mounted_directory_hides_its_siblings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = tmp_path / "system"
    (system / "bin").mkdir(parents=True)
    (system / "bin" / "tool").write_text("TOOLCHAIN")
    workspace = system / "tenants" / "a" / "ws"
    workspace.mkdir(parents=True)
    (system / "tenants" / "b").mkdir()
    (system / "tenants" / "b" / "data").write_text("TENANT-B")
    monkeypatch.setattr(sandbox, "SYSTEM_PATHS", (*sandbox.SYSTEM_PATHS, str(system)))
    sandbox.system_mounts.cache_clear()
    try:
        result = await _exec(workspace, f"cat {system}/bin/tool; echo; cat {system}/tenants/b/data; ls {system}/tenants")
    finally:
        sandbox.system_mounts.cache_clear()
    assert "TENANT-B" not in result.output
    assert result.stdout.split() == ["TOOLCHAIN", "a"], result.output


def test_toolchain_dirs_take_prefixes_and_never_home_or_the_workspace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for sub in (".pyenv/shims", ".cargo/bin", ".rustup", ".local/bin", "proj/ws/bin", "venv/bin", "bin"):
        (home / sub).mkdir(parents=True)
    environ = {
        "HOME": str(home),
        "PATH": ":".join([f"{home}/.pyenv/shims", f"{home}/.cargo/bin", f"{home}/.local/bin", f"{home}/bin",
                          "/usr/bin", "relative/bin", f"{home}/proj/ws/bin", "/"]),
        "VIRTUAL_ENV": f"{home}/venv",
        "JAVA_HOME": str(home),
    }
    chosen = sandbox.toolchain_dirs(environ, str(home / "proj" / "ws"))
    assert sorted(chosen) == sorted([
        f"{home}/.pyenv", f"{home}/.cargo", f"{home}/.local/bin", f"{home}/bin", f"{home}/venv", f"{home}/.rustup",
    ])
