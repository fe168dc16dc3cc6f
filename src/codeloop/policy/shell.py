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

import fnmatch
import posixpath
import re
from collections.abc import Mapping
from functools import lru_cache
from urllib.parse import urlsplit

from codeloop.policy.model import Decision, NetworkPolicy, ShellPolicy, strictest
from codeloop.policy.paths import matches, normalize
from codeloop.policy.shell_parse import ParsedCommand, ShellParseError, split_commands
from codeloop.policy.wrappers import SHELLS

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
    env = judge_env(dict(a.split("=", 1) for a in cmd.assignments if "=" in a), policy, net)
    if env.action != "allow":
        return env
    if not cmd.argv:  # an assignment or a group's redirections; substitutions are judged apart
        outside = _outside_write(cmd) if policy.ask_on_outside_writes else None
        if outside:
            return Decision("ask", f"a redirection writes outside the workspace ({outside!r})",
                            "shell.outsideWorkspace")
        return _protected(cmd, policy)
    if name in policy.blocked_commands or cmd.argv[0] in policy.blocked_commands:
        return Decision("deny", f"command {name!r} is blocked", "shell.blockedCommands",
                        f"remove {name} from the command")
    if cmd.dynamic:
        why = cmd.unresolved or f"command name {cmd.argv[0]!r} is computed at run time"
        return _undecidable(policy, why, "shell.dynamic")
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
    abbreviated = _abbreviation_hit(cmd, policy)
    if abbreviated:
        return abbreviated
    if "xargs" in cmd.via and not is_read_only(cmd):
        return Decision("ask", f"xargs gives {name!r} arguments read from stdin, which cannot be checked",
                        "shell.dynamic")
    protected = _protected(cmd, policy)
    if protected.action != "allow":
        return protected
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
    """A path written outside the workspace, or one whose place is decided at run time."""
    for red in cmd.redirects:
        if red.writes and (red.dynamic or _outside(red.target)):
            return red.target
    if cmd.name in FILE_CHANGING:
        for i, arg in enumerate(cmd.args, start=1):
            target = arg.split("=", 1)[1] if cmd.name == "dd" and arg.startswith("of=") else arg
            if not target.startswith("-") and (i in cmd.dynamic_args or _outside(target)):
                return target
    return None


_LONG_OPTION = re.compile(r"--[A-Za-z][A-Za-z0-9-]+")


def _abbreviation_hit(cmd: ParsedCommand, policy: ShellPolicy) -> Decision | None:
    """GNU getopt and git take any unique prefix of a long option (``rm --recu``): judge the
    command again with each prefix of an option the policy's patterns name written out."""
    guarded = {m for pat in (*policy.blocked_patterns, *policy.approval_patterns) for m in _LONG_OPTION.findall(pat)}
    for i, arg in enumerate(cmd.argv):
        key = arg.split("=", 1)[0]
        if not key.startswith("--") or len(key) < 3 or key in guarded:
            continue
        for full in sorted(g for g in guarded if g.startswith(key)):
            shown = " ".join((*cmd.argv[:i], full + arg[len(key):], *cmd.argv[i + 1:]))
            for pat in (*policy.blocked_patterns, *policy.approval_patterns):
                if _rx(pat).search(shown):
                    return Decision("ask", f"{' '.join(cmd.argv)[:120]!r} abbreviates {full!r}: read as "
                                    f"{shown[:120]!r}, it matches {pat!r}", "shell.approvalRequired")
    return None


_NAMES_ONLY = frozenset({"ls", "stat", "du", "echo", "printf", "basename", "dirname", "realpath", "readlink",
                         "tree", "test", "[", "true", "false"})
"""Programs that look at file names, not contents: a glob in their arguments is harmless."""


def _sample(glob: str) -> str:
    """A path the protected ``glob`` matches (``*.pem`` -> ``x.pem``), to try globs against."""
    return glob.replace("**/", "").replace("/**", "/x").replace("**", "x").replace("*", "x").replace("?", "x")


def _glob_may_match(pattern: str, glob: str) -> bool:
    """True when the shell glob ``pattern`` may expand to a path ``glob`` protects (a leading
    dot must be written, as in bash)."""
    want = normalize(_sample(glob)).split("/")
    have = normalize(pattern).split("/")
    if "/" not in glob.rstrip("/"):
        want, have = want[-1:], have[-1:]
    return len(want) == len(have) and all(
        fnmatch.fnmatchcase(w, h) and (h.startswith(".") or not w.startswith(".")) for w, h in zip(want, have, strict=True))


def _protected(cmd: ParsedCommand, policy: ShellPolicy) -> Decision:
    """Ask when an argument or a redirection names a protected path (``cat .env``,
    ``ln -s .env e``, ``echo x > .git/hooks/pre-commit``) or a glob that may reach one."""
    if not policy.protected_paths:
        return Decision.allow()
    words = [(i, a) for i, a in enumerate(cmd.argv) if i > 0]
    words += [(-1, r.target) for r in cmd.redirects if not r.dynamic]
    for i, word in words:
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if not value or value.startswith(("-", "/", "~")):
            continue
        path = posixpath.normpath(value)
        if path.startswith(".."):
            continue
        if i in cmd.glob_args:
            hit = None if cmd.name in _NAMES_ONLY else next(
                (g for g in policy.protected_paths if _glob_may_match(path, g)), None)
        else:
            hit = matches(path, policy.protected_paths)
        if hit:
            why = f"{cmd.name or 'a redirection'} names {word!r}, a protected path (matches {hit!r})"
            if policy.ask_on_dynamic:
                return Decision("ask", why, "shell.protectedPaths")
            return Decision("deny", why, "shell.protectedPaths", "leave protected files alone")
    return Decision.allow()


SHELL_READ_VARIABLES = frozenset({
    "BASH_ENV", "ENV", "PS0", "PS1", "PS2", "PS4", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "IFS",
    "CDPATH", "GLOBIGNORE", "BASH_XTRACEFD", "PERL5OPT", "PERL5DB", "RUBYOPT", "NODE_OPTIONS",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "PYTHONSTARTUP", "PYTHONHOME", "GCONV_PATH",
    "GLIBC_TUNABLES", "LESSOPEN", "LESSCLOSE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND", "GIT_SSH", "GIT_DIR",
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "PERL5LIB", "RUBYLIB", "NODE_PATH", "BROWSER",
})
"""Variables that make a shell or a common program run code or read another configuration:
a value for one cannot be judged, so it asks."""
_SHELL_READ_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")
COMMAND_VARIABLES = frozenset({"PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL",
                               "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF"})
"""Variables whose value a program runs as a command line: judged as one."""


def judge_env(env: Mapping[str, str], policy: ShellPolicy, network: NetworkPolicy | None = None,
              workspace: str | None = None) -> Decision:
    """Decide the environment entries given to a command (``X=1 cmd``, ``env X=1 cmd``, the
    ``env`` of a spaces shell operation). ``workspace``: the absolute root, when known, so a
    ``PATH`` entry inside it asks."""
    verdicts = []
    for name, value in env.items():
        why = ""
        if name in SHELL_READ_VARIABLES or name.startswith(_SHELL_READ_PREFIXES):
            why = f"the variable {name} makes the shell or a program run code that cannot be checked"
        elif name == "PATH":
            why = _path_problem(value, workspace)
        elif name in COMMAND_VARIABLES and value.strip():
            verdicts.append(evaluate_command(value, policy, network))
            continue
        if why:
            verdicts.append(_undecidable(policy, why, "shell.environment"))
    return strictest(verdicts)


def _path_problem(value: str, workspace: str | None) -> str:
    for entry in value.split(":"):
        if entry in ("$PATH", "${PATH}"):
            continue
        if not entry.startswith("/") or "$" in entry or "/../" in entry + "/":
            return f"PATH entry {entry!r} is relative or computed at run time: a program name could run anything"
        if workspace and (entry + "/").startswith(workspace.rstrip("/") + "/"):
            return f"PATH entry {entry!r} is inside the workspace: a program name could run anything"
    return ""


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
    domains = (dom.lower().lstrip(".") for dom in allowed)
    return any(host.endswith(d[1:]) if d.startswith("*.") else host == d or host.endswith("." + d)
               for d in domains)


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
