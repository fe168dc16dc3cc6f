"""Decide whether a shell line may run: every command of the line is judged.

``evaluate_command(line, policy, network)`` parses the line with
:func:`codeloop.policy.shell_parse.split_commands` and applies, to each command:
blocked commands and patterns (deny), the allow-list (deny), network tools under the
network policy (deny), approval commands and patterns, commands whose name is computed at
run time, writes outside the workspace, and shells fed from a pipe (ask). The strictest
verdict wins. A line that cannot be parsed is never allowed: it is sent for approval
(or refused when ``ask_on_dynamic`` is off).
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urlsplit

from codeloop.policy.model import Decision, NetworkPolicy, ShellPolicy, strictest
from codeloop.policy.shell_parse import SHELLS, ParsedCommand, ShellParseError, split_commands

NETWORK_COMMANDS = frozenset({"curl", "wget", "nc", "ncat", "netcat", "ssh", "scp", "sftp", "ftp",
                              "telnet", "socat", "rsync", "aria2c", "httpie", "http", "lftp"})
"""Programs whose purpose is network access."""

INTERPRETERS = SHELLS | {"python", "python3", "perl", "ruby", "node", "php", "lua"}
"""Programs that execute code read from stdin when given no script."""

FILE_CHANGING = frozenset({"rm", "mv", "cp", "ln", "chmod", "chown", "chgrp", "tee", "dd", "truncate",
                           "install", "touch", "mkdir", "rmdir", "shred", "unlink", "sed", "rsync"})
"""Programs whose path arguments name files they change."""

_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})

READ_ONLY_COMMANDS = frozenset({
    "ls", "cat", "head", "tail", "wc", "pwd", "echo", "printf", "grep", "egrep", "fgrep", "rg", "tree",
    "file", "stat", "du", "df", "which", "whoami", "date", "uname", "diff", "cmp", "sort", "uniq",
    "cut", "tr", "basename", "dirname", "realpath", "readlink", "true", "false", "test", "[", "nl",
    "less", "more", "env", "printenv", "id", "hostname", "sha256sum", "md5sum", "column", "jq", "od", "xxd",
})
"""Programs that only read: the one list behind the ``restrictive`` preset and the ``on-risk``
approval mode (``find``, ``git`` and ``sort`` are judged by their arguments in :func:`is_read_only`)."""

_GIT_READ = frozenset({"status", "diff", "log", "show", "blame", "branch", "rev-parse", "ls-files", "grep", "remote"})
FIND_WRITES = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprintf", "-fls"})
"""``find`` actions that change files or run commands."""


def is_read_only(cmd: ParsedCommand) -> bool:
    """True when ``cmd`` cannot change files (no writing redirection, a reading program)."""
    if cmd.dynamic or any(r.writes and r.target not in ("/dev/null", "&1", "&2", "1", "2") for r in cmd.redirects):
        return False
    if cmd.name == "git":
        sub = next((a for a in cmd.args if not a.startswith("-")), "")
        return sub in _GIT_READ and not (sub == "branch" and any(a.startswith("-") for a in cmd.args[1:]))
    if cmd.name == "find":
        return not any(a in FIND_WRITES for a in cmd.args)
    if cmd.name == "sort":
        return not any(a.startswith("-o") or a == "--output" for a in cmd.args)
    return cmd.name in READ_ONLY_COMMANDS


@lru_cache(maxsize=256)
def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def evaluate_command(line: str, policy: ShellPolicy, network: NetworkPolicy | None = None) -> Decision:
    """Decide ``line`` under ``policy`` (and ``network``, default: network off)."""
    net = network or NetworkPolicy()
    if not policy.enabled:
        return Decision("deny", "shell commands are disabled by policy", "shell.enabled",
                        "enable the shell in the space policy")
    try:
        commands = split_commands(line)
    except ShellParseError as exc:
        return _undecidable(policy, f"the command line cannot be parsed safely ({exc})", "shell.unparseable")
    decisions = [_line_patterns(line, policy)]
    decisions += [_judge(cmd, policy, net) for cmd in commands]
    return strictest(decisions)


def _undecidable(policy: ShellPolicy, reason: str, rule: str) -> Decision:
    if policy.ask_on_dynamic:
        return Decision("ask", reason, rule)
    return Decision("deny", reason, rule, "write the command without run-time expansion")


def _line_patterns(line: str, policy: ShellPolicy) -> Decision:
    for pat in policy.blocked_patterns:
        if _rx(pat).search(line):
            return Decision("deny", f"command line matches blocked pattern {pat!r}", "shell.blockedPatterns")
    for pat in policy.approval_patterns:
        if _rx(pat).search(line):
            return Decision("ask", f"Destructive command requires approval (the line matches {pat!r})",
                            "shell.approvalRequired")
    return Decision.allow()


def _judge(cmd: ParsedCommand, policy: ShellPolicy, net: NetworkPolicy) -> Decision:
    name = cmd.name
    shown = " ".join(cmd.argv) or cmd.text
    if not cmd.argv:
        return Decision.allow()  # plain assignment; its substitutions are judged separately
    if cmd.dynamic:
        return _undecidable(policy, f"command name {cmd.argv[0]!r} is computed at run time", "shell.dynamic")
    if name in policy.blocked_commands or cmd.argv[0] in policy.blocked_commands:
        return Decision("deny", f"command {name!r} is blocked", "shell.blockedCommands",
                        f"remove {name} from the command")
    if name.startswith("mkfs") and "mkfs" in policy.blocked_commands:
        return Decision("deny", f"command {name!r} is blocked", "shell.blockedCommands")
    for pat in policy.blocked_patterns:
        if _rx(pat).search(shown):
            return Decision("deny", f"command {shown[:120]!r} matches blocked pattern {pat!r}",
                            "shell.blockedPatterns")
    if policy.allowed_commands is not None and name not in policy.allowed_commands:
        return Decision("deny", f"command {name!r} is not in the allowed commands", "shell.allowedCommands",
                        f"use one of: {', '.join(sorted(policy.allowed_commands))}")
    network = _network_decision(cmd, net)
    if network.action != "allow":
        return network
    if name in policy.approval_commands:
        return Decision("ask", f"Destructive command requires approval ({name!r} is listed)", "shell.approvalRequired")
    for pat in policy.approval_patterns:
        if _rx(pat).search(shown):
            return Decision("ask", f"Destructive command requires approval ({shown[:120]!r} matches {pat!r})",
                            "shell.approvalRequired")
    fed = cmd.stdin_piped or (cmd.stdin_inline and name not in SHELLS)  # shells' here-docs are parsed
    if fed and name in INTERPRETERS and not _has_script(cmd):
        return Decision("ask", f"feeding code to {name!r} on stdin runs code that cannot be checked",
                        "shell.pipeToInterpreter")
    if policy.ask_on_outside_writes:
        outside = _outside_write(cmd)
        if outside:
            return Decision("ask", f"{name!r} writes outside the workspace ({outside!r})",
                            "shell.outsideWorkspace")
    return Decision.allow()


def _has_script(cmd: ParsedCommand) -> bool:
    return any(not a.startswith("-") for a in cmd.args) or any(a in ("-c", "-e") for a in cmd.args)


def _outside(path: str) -> bool:
    if path in _HARMLESS_TARGETS or path.startswith("/dev/fd/") or path.isdigit() or path == "-":
        return False
    return path.startswith(("/", "~")) or ".." in path.split("/")


def _outside_write(cmd: ParsedCommand) -> str | None:
    for red in cmd.redirects:
        if red.writes and _outside(red.target):
            return red.target
    if cmd.name in FILE_CHANGING:
        for arg in cmd.args:
            target = arg.split("=", 1)[1] if cmd.name == "dd" and arg.startswith("of=") else arg
            if not target.startswith("-") and _outside(target):
                return target
    return None


def _hosts(cmd: ParsedCommand) -> list[str]:
    hosts = []
    for arg in cmd.args:
        if "://" in arg:
            host = urlsplit(arg).hostname
            if host:
                hosts.append(host)
        elif "@" in arg and ":" in arg:  # scp/rsync user@host:path
            hosts.append(arg.split("@", 1)[1].split(":", 1)[0])
    return hosts


def _domain_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    for dom in allowed:
        d = dom.lower().lstrip(".")
        if d.startswith("*."):
            if host.endswith(d[1:]):
                return True
        elif host == d or host.endswith("." + d):
            return True
    return False


def _network_decision(cmd: ParsedCommand, net: NetworkPolicy) -> Decision:
    if cmd.name not in NETWORK_COMMANDS:
        return Decision.allow()
    if not net.enabled:
        return Decision("deny", f"{cmd.name!r} needs the network, which is disabled for this workspace",
                        "network.enabled", "enable network access in the space policy")
    if net.allowed_domains:
        hosts = _hosts(cmd)
        if not hosts:
            return Decision("ask", f"cannot tell which host {cmd.name!r} contacts", "network.allowedDomains")
        for host in hosts:
            if not _domain_allowed(host.lower(), net.allowed_domains):
                return Decision("deny", f"host {host!r} is not in the allowed domains", "network.allowedDomains",
                                f"allowed: {', '.join(net.allowed_domains)}")
    return Decision.allow()
