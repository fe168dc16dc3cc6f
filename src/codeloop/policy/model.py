"""Policy values: what a workspace may do with files, commands and the network.

Frozen dataclasses shared by every face (spaces policies, relay, the CLI's approval modes
and the tool pipeline's POLICY step all speak :class:`Decision`). The decisions are made in
:mod:`codeloop.policy.shell` and :mod:`codeloop.policy.paths`; the named presets live in
:mod:`codeloop.policy.presets`; the CLI's approval modes in :mod:`codeloop.policy.approval_modes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["allow", "deny", "ask"]


@dataclass(frozen=True)
class Decision:
    """The verdict on one operation."""

    action: Action
    """``allow``: run it; ``deny``: refuse it; ``ask``: pause for a human's approval."""
    reason: str
    """Why, for the user and the agent (names the command or path and the rule)."""
    rule: str | None = None
    """The policy rule that decided (``shell.blockedCommands``), ``None`` for a plain allow."""
    suggestion: str | None = None
    """How the caller could get the operation through, when there is a way."""
    remember_as: tuple[str, ...] = ()
    """For an ``ask``: what an "always" answer would store (command prefixes, a tool's name);
    empty when the call may be approved once only."""

    @staticmethod
    def allow() -> Decision:
        """A plain allow."""
        return Decision("allow", "allowed")

    @staticmethod
    def deny(reason: str, rule: str | None = None, suggestion: str | None = None) -> Decision:
        """Refuse; the caller (a model, a user) reads ``reason``."""
        return Decision("deny", reason, rule, suggestion)

    @staticmethod
    def ask(reason: str, rule: str | None = None, remember_as: tuple[str, ...] = ()) -> Decision:
        """Hold for a human's approval; ``reason`` is what the human is shown, ``remember_as``
        what an "always" answer may store."""
        return Decision("ask", reason, rule, None, tuple(remember_as))


_SEVERITY = {"allow": 0, "ask": 1, "deny": 2}


def strictest(decisions: list[Decision]) -> Decision:
    """The most severe decision (deny > ask > allow), the first of equals; allow when empty."""
    best = Decision.allow()
    for d in decisions:
        if _SEVERITY[d.action] > _SEVERITY[best.action]:
            best = d
    return best


@dataclass(frozen=True)
class NetworkPolicy:
    """Network access of commands."""

    enabled: bool = False
    """False: commands run without network (sandbox) and network tools are refused."""
    allowed_domains: tuple[str, ...] = ()
    """When enabled and non-empty, the only hosts network tools may name (``*.example.com``)."""


@dataclass(frozen=True)
class ShellPolicy:
    """Which commands may run. Names are program basenames (``rm``), patterns are regexes
    searched in each command's normalized text (argv joined by spaces)."""

    enabled: bool = True
    """False: no command runs."""
    allowed_commands: tuple[str, ...] | None = None
    """When set, every command of a line must be one of these; ``None`` allows any."""
    blocked_commands: tuple[str, ...] = ()
    """Commands refused wherever they appear in a line (also behind ``env``, ``bash -c``...)."""
    blocked_patterns: tuple[str, ...] = ()
    """Regexes: a matching command is refused."""
    approval_commands: tuple[str, ...] = ()
    """Commands that need a human's approval."""
    approval_patterns: tuple[str, ...] = ()
    """Regexes: a matching command needs approval."""
    ask_on_dynamic: bool = True
    """Ask when a command name is computed at run time (``$CMD``) or the line cannot be parsed;
    False refuses instead."""
    protected_paths: tuple[str, ...] = ()
    """Path globs (as in :class:`FilesystemPolicy`): a command whose argument or redirection
    names one, or a glob that may reach one, asks (refused when ``ask_on_dynamic`` is off)."""
    ask_on_outside_writes: bool = True
    """Ask when a redirection or a file-changing command names a path outside the workspace
    (absolute, ``~``, or with a ``..`` segment)."""
    ask_on_git_risks: bool = True
    """Ask when git is given a setting that may name a program (``git config core.pager``,
    ``git -c``) or told to throw away work it keeps no copy of (``git checkout -- .``,
    ``git stash clear``): :mod:`codeloop.policy.git_rules`."""
    default_timeout_ms: int = 30_000
    """Timeout of a command that names none."""
    max_timeout_ms: int = 600_000
    """Upper bound applied to any requested timeout."""


@dataclass(frozen=True)
class FilesystemPolicy:
    """Which workspace paths may be read and written. Globs are ``/``-separated, relative to
    the workspace; ``**`` spans directories; a glob without ``/`` matches at any depth."""

    enabled: bool = True
    """False: no file operation runs."""
    read_only: bool = False
    """True: reads only."""
    max_file_size: int = 10 * 1024 * 1024
    """Largest file that may be written or read, in bytes."""
    allowed_paths: tuple[str, ...] = ()
    """When non-empty, every path must match one of these."""
    blocked_paths: tuple[str, ...] = ()
    """Paths never read or written."""
    approval_paths: tuple[str, ...] = ()
    """Writes and deletes of matching paths need approval."""


@dataclass(frozen=True)
class Policy:
    """A whole workspace policy."""

    name: str
    """Preset it came from (``standard``) or ``custom``."""
    filesystem: FilesystemPolicy
    shell: ShellPolicy
    network: NetworkPolicy
    unsandboxed: bool = False
    """True when commands run without the bubblewrap sandbox: a command line that is not
    read-only then needs approval even where the policy would allow it (the policy judges
    text, only the sandbox confines what runs)."""
