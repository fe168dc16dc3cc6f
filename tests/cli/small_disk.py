"""A real full disk for one test: a small tmpfs in a private mount namespace (issue 23).

``unshare -rm`` gives a holder process its own user and mount namespaces (root inside, no
privilege outside), where a tmpfs of a few hundred KiB is mounted on ``mountpoint``.
Commands that must see it run inside with ``nsenter`` (:meth:`SmallDisk.command`); the test
reads and fills it from outside through ``/proc/<holder>/root`` (:meth:`SmallDisk.path`).
Closing the holder's stdin ends it and the tmpfs with it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

PAGE = 4096


def available() -> str | None:
    """Why a small disk cannot be made here, or None."""
    for tool in ("unshare", "nsenter", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"unshare -rm + mount tmpfs fails: {probe.stderr.strip()}"


class SmallDisk:
    """A tmpfs of ``size`` bytes mounted on ``mountpoint`` (an empty directory) for a holder."""

    def __init__(self, mountpoint: Path, size: int) -> None:
        why = available()
        if why is not None:
            pytest.skip(why)
        self.mountpoint = mountpoint
        self.size = size
        mountpoint.mkdir(parents=True, exist_ok=True)
        self.holder = subprocess.Popen(
            ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size={size} tmpfs '{mountpoint}' && echo ready"
                                           " && exec cat"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.holder.stdout is not None and self.holder.stdout.readline() == "ready\n"

    def path(self, inside: Path) -> Path:
        """``inside`` (a path under the mountpoint) as the test process reaches it."""
        return Path(f"/proc/{self.holder.pid}/root") / inside.relative_to("/")

    def command(self, args: list[str]) -> list[str]:
        """``args`` run in the holder's namespaces, where the tmpfs is mounted."""
        return ["nsenter", "-t", str(self.holder.pid), "-U", "-m", "--preserve-credentials", "--", *args]

    def fill(self, leave: int) -> None:
        """Take all the free space but ``leave`` bytes (rounded down to whole pages)."""
        filler = self.path(self.mountpoint / ".filler")
        free = self.free()
        current = filler.stat().st_size if filler.exists() else 0
        with open(filler, "ab") as handle:
            handle.truncate(0)
            handle.write(b"\0" * (current + free - leave // PAGE * PAGE))

    def free(self) -> int:
        """Bytes still free on the tmpfs."""
        out = subprocess.run(self.command(["df", "-B1", "--output=avail", str(self.mountpoint)]),
                             capture_output=True, text=True, check=True).stdout.split()
        return int(out[-1])

    def unfill(self) -> None:
        """Space is back."""
        self.path(self.mountpoint / ".filler").unlink(missing_ok=True)

    def __enter__(self) -> SmallDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.holder.stdin is not None
        self.holder.stdin.close()
        self.holder.wait(timeout=10)
