"""The named policies ``restrictive``, ``standard`` and ``permissive``.

- ``restrictive``: read-mostly. Only inspection commands run; every file write or delete
  needs approval; no network.
- ``standard`` (the default): any command except privilege, system and disk tools; destructive
  or history-rewriting commands, commands computed at run time, unparseable lines, shells fed
  from pipes and writes outside the workspace need approval; secrets and ``.git`` internals
  cannot be touched; no network.
- ``permissive``: everything except privilege escalation and wiping the disk; network on.
"""

from __future__ import annotations

from dataclasses import replace

from codeloop.policy.model import FilesystemPolicy, NetworkPolicy, Policy, ShellPolicy
from codeloop.policy.shell import FIND_WRITES, READ_ONLY_COMMANDS

PRESET_NAMES = ("restrictive", "standard", "permissive")

_PRIVILEGED = ("sudo", "su", "doas", "pkexec", "runuser", "chroot", "nsenter", "unshare", "setcap", "capsh")
_SYSTEM = ("mkfs", "fdisk", "sfdisk", "parted", "wipefs", "shutdown", "reboot", "halt", "poweroff", "init",
           "telinit", "systemctl", "service", "mount", "umount", "swapon", "swapoff", "insmod", "rmmod",
           "modprobe", "iptables", "ip6tables", "nft", "useradd", "userdel", "usermod", "groupadd",
           "passwd", "chpasswd", "visudo", "crontab", "at")

_SECRETS = (".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*", ".ssh/**", ".aws/**",
            ".netrc", ".git/hooks/**", ".git/config")

_DESTRUCTIVE_PATTERNS = (
    r"^rm\s+(.*\s)?(-[a-zA-Z]*[rRf][a-zA-Z]*|--recursive|--force)(\s|$)",
    # git commands that throw work away or set programs are judged by git_rules (ask_on_git_risks).
    r"^(chmod|chown|chgrp)\s+(.*\s)?(-R|--recursive)(\s|$)",
    r"^find\s.*\s-delete(\s|$)",
    r"^(docker|podman|kubectl|terraform)\s",
    r"^(npm|yarn|pnpm|cargo|twine|gem)\s+(publish|yank|unpublish)",
)

_CATASTROPHIC = (
    r"^rm\s+(.*\s)?-[a-zA-Z]*[rR][a-zA-Z]*\s+(.*\s)?(/|/\*|~|~/|\$HOME)(\s|$)",
    r":\(\)\s*\{.*:\s*\|\s*:.*\}",
    r"^dd\s+.*of=/dev/(sd|nvme|hd|vd|xvd|mmcblk)",
    r">\s*/dev/(sd|nvme|hd|vd|xvd|mmcblk)",
)

_INSPECTION = tuple(sorted(READ_ONLY_COMMANDS | {"find"}))  # find -delete/-exec asks, below


_STANDARD_SHELL = ShellPolicy(
    protected_paths=_SECRETS,
    blocked_commands=_PRIVILEGED + _SYSTEM,
    blocked_patterns=_CATASTROPHIC,
    approval_commands=("dd", "kill", "pkill", "killall", "shred", "mkswap"),
    approval_patterns=_DESTRUCTIVE_PATTERNS,
)

_PRESETS = {
    "standard": Policy("standard", FilesystemPolicy(blocked_paths=_SECRETS), _STANDARD_SHELL,
                       NetworkPolicy(enabled=False)),
    "restrictive": Policy(
        "restrictive",
        FilesystemPolicy(blocked_paths=_SECRETS, approval_paths=("**",), max_file_size=1024 * 1024),
        replace(_STANDARD_SHELL, allowed_commands=_INSPECTION, approval_commands=(),
                approval_patterns=(rf"^find\s.*\s({'|'.join(sorted(FIND_WRITES))})(\s|$)",),
                ask_on_dynamic=False, max_timeout_ms=120_000),
        NetworkPolicy(enabled=False),
    ),
    "permissive": Policy(
        "permissive",
        FilesystemPolicy(blocked_paths=(".git/hooks/**",)),
        ShellPolicy(protected_paths=(".git/hooks/**",), blocked_commands=_PRIVILEGED,
                    blocked_patterns=_CATASTROPHIC, ask_on_dynamic=False, ask_on_outside_writes=False,
                    ask_on_git_risks=False,
                    max_timeout_ms=3_600_000),
        NetworkPolicy(enabled=True),
    ),
}


def preset(name: str) -> Policy:
    """The policy called ``name``; raise ``ValueError`` naming the presets for another name."""
    if name not in _PRESETS:
        raise ValueError(f"unknown policy preset {name!r}; use one of: {', '.join(PRESET_NAMES)}")
    return _PRESETS[name]
