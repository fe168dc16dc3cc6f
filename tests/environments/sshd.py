"""A throw-away OpenSSH server on 127.0.0.1 for the SSH environment tests.

Generates a host key and a user key in a temp dir, writes a known_hosts file for the
chosen port, and runs ``sshd -D`` (Debian ``openssh-server``, installed by
``scripts/system-deps``) as the current user. Root logins are allowed by key only.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/bin/sshd")


@dataclass
class SshServer:
    host: str
    port: int
    user: str
    user_key: Path
    known_hosts: Path
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()


def find_sshd() -> str | None:
    for candidate in SSHD_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("sshd")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_sshd(workdir: Path) -> SshServer:
    sshd = find_sshd()
    if sshd is None:
        raise RuntimeError("sshd is not installed: run scripts/system-deps (apt-get install openssh-server)")
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("hostkey", "userkey"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(workdir / name)], check=True)
    (workdir / "authorized_keys").write_bytes((workdir / "userkey.pub").read_bytes())
    port = _free_port()
    config = workdir / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {workdir / 'hostkey'}\n"
        f"AuthorizedKeysFile {workdir / 'authorized_keys'}\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
        f"StrictModes no\nUsePAM no\nPidFile {workdir / 'sshd.pid'}\nSubsystem sftp internal-sftp\n"
        "MaxSessions 100\nMaxStartups 100\n"
    )
    host_pub = (workdir / "hostkey.pub").read_text().split()
    known = workdir / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    log = open(workdir / "sshd.log", "wb")
    process = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)], stdout=log, stderr=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {(workdir / 'sshd.log').read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    return SshServer("127.0.0.1", port, getpass.getuser(), workdir / "userkey", known, process)
