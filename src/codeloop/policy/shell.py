"""Decide whether a shell line may run: every command of the line is judged.

``evaluate_command(line, policy, network)`` parses the line with
:func:`codeloop.policy.shell_parse.split_commands` and applies, to each command:
blocked commands and patterns (deny), the allow-list (deny), network tools under the
network policy (deny), approval commands and patterns, commands whose name is computed at
run time, writes outside the workspace, shells fed from a pipe, git settings that may name
a program and git commands that throw work away (:mod:`codeloop.policy.git_rules`) (ask);
paths are judged where the line's ``cd``s put them. The strictest verdict wins;
:func:`judge_line` also returns what was seen (commands, resolved paths), which the
differential harness checks against bash (``tests/security/test_bash_differential.py``). A line that cannot be parsed is never allowed: it is sent for approval
(or refused when ``ask_on_dynamic`` is off).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from codeloop.policy.code_contexts import _SHELL_READ_PREFIXES, SHELL_READ_VARIABLES, names_code_variable
from codeloop.policy.git_rules import config_writes, git_risk
from codeloop.policy.model import Decision, NetworkPolicy, ShellPolicy, strictest
from codeloop.policy.paths import matches, normalize
from codeloop.policy.shell_parse import ParsedCommand, ShellParseError, split_commands
from codeloop.policy.workdir import resolve
from codeloop.policy.wrappers import SHELLS

__all__ = ["SHELL_READ_VARIABLES", "Judgement", "PathUse", "evaluate_command", "judge_env", "judge_line"]

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


@dataclass(frozen=True)
class PathUse:
    """A path one command of a line names, where it lands."""

    word: str
    """The word as the command gets it (quotes removed)."""
    resolved: str | None
    """The workspace-relative path it reaches from one directory the command may run in
    (``cd .git`` then ``hooks/x`` -> ``.git/hooks/x``); None when outside or unknown."""
    access: Literal["read", "write"]
    """``write`` for a writing redirection or a program that changes the files it names."""


@dataclass(frozen=True)
class Judgement:
    """What the policy saw in a line and what it decided: the programs with their arguments
    and the paths with where they land (the differential harness checks bash against these)."""

    decision: Decision
    commands: tuple[ParsedCommand, ...] = ()
    """Every command the line runs, wrapped ones included; empty when it could not be parsed."""
    paths: tuple[PathUse, ...] = ()


def evaluate_command(line: str, policy: ShellPolicy, network: NetworkPolicy | None = None) -> Decision:
    """Decide ``line`` under ``policy`` (and ``network``, default: network off)."""
    return judge_line(line, policy, network).decision


def judge_line(line: str, policy: ShellPolicy, network: NetworkPolicy | None = None) -> Judgement:
    """What ``line`` runs and touches, and the decision under ``policy`` (see :class:`Judgement`)."""
    net = network or NetworkPolicy()
    if not policy.enabled:
        return Judgement(Decision("deny", "shell commands are disabled by policy", "shell.enabled",
                                  "enable the shell in the space policy"))
    try:
        commands = split_commands(line)
    except ShellParseError as exc:
        return Judgement(_undecidable(policy, f"the command line cannot be parsed safely ({exc})",
                                      "shell.unparseable"))
    decisions = [_line_patterns(line, policy)]
    decisions += [_judge(cmd, policy, net) for cmd in commands]
    paths = tuple(use for cmd in commands for use in path_uses(cmd))
    return Judgement(strictest(decisions), tuple(commands), paths)


def path_uses(cmd: ParsedCommand) -> list[PathUse]:
    """Each path ``cmd`` names, resolved from each directory it may run in."""
    words = [(a.split("=", 1)[1] if a.startswith("-") and "=" in a else a, cmd.name in FILE_CHANGING)
             for i, a in enumerate(cmd.argv) if i > 0 and i not in cmd.dynamic_args]
    words += [(r.target, r.writes) for r in cmd.redirects if not r.dynamic and not r.target.startswith("&")]
    if cmd.name == "git" and config_writes(list(cmd.args)):
        words.append((".git/config", True))
    uses: list[PathUse] = []
    for word, writes in words:
        if not word or word.startswith("-"):
            continue
        for cwd in cmd.cwds:
            uses.append(PathUse(word, resolve(word, cwd), "write" if writes else "read"))
    return uses


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
    env = judge_env(dict((_variable(a), a.split("=", 1)[1]) for a in cmd.assignments if "=" in a), policy, net)
    if env.action != "allow":
        return env
    if cmd.unresolved and not cmd.argv:
        return _undecidable(policy, cmd.unresolved, "shell.dynamic")
    set_here = _sets_code_variable(cmd)
    if set_here:
        return _undecidable(policy, set_here, "shell.environment")
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
    if name == "git" and policy.ask_on_git_risks:
        risk = git_risk(list(cmd.args))
        if risk:
            return Decision("ask", f"{risk} ({shown[:120]!r})", "shell.approvalRequired")
    if "xargs" in cmd.via and not is_read_only(cmd):
        return Decision("ask", f"xargs gives {name!r} arguments read from stdin, which cannot be checked",
                        "shell.dynamic")
    protected = _protected(cmd, policy)
    if protected.action != "allow":
        return protected
    # Shells' here-documents are parsed; a here-document with a quoted delimiter given to another
    # interpreter (`python3 - <<'PY'`) is a script written out in the line, like `python3 -c '...'`
    # (a here-string still asks, as the bypass corpus has it).
    literal = all(r.op in ("<<", "<<-") and not r.dynamic for r in cmd.redirects if r.op.startswith("<<"))
    fed = cmd.stdin_piped or (cmd.stdin_inline and name not in SHELLS and not literal)
    if fed and name in INTERPRETERS and not _has_script(cmd):
        return Decision("ask", f"feeding code to {name!r} on stdin runs code that cannot be checked",
                        "shell.pipeToInterpreter")
    if policy.ask_on_outside_writes:
        outside = _outside_write(cmd)
        if outside:
            return Decision("ask", f"{name!r} writes outside the workspace ({outside!r})",
                            "shell.outsideWorkspace")
    return Decision.allow()


_SETTERS = frozenset({"read", "mapfile", "readarray", "getopts", "declare", "typeset", "local", "export",
                      "readonly", "let", "printf", "unset", "wait"})
"""Builtins that set the variables their arguments name (``printf -v NAME``, ``read NAME``)."""


def _variable(assignment: str) -> str:
    """The variable an assignment word sets (``X+=1`` and ``X[0]=1`` set ``X``)."""
    m = re.match(r"[A-Za-z_][A-Za-z_0-9]*", assignment)
    return m.group(0) if m else assignment.split("=", 1)[0]


def _sets_code_variable(cmd: ParsedCommand) -> str:
    """Why ``cmd`` sets a variable that makes the shell or a program run code (``printf -v
    BASH_ENV``, ``read ENV``, ``export BASH_ENV``), or ``""``."""
    if cmd.name not in _SETTERS or (cmd.name in ("printf", "wait") and "-v" not in cmd.args):
        return ""
    names = cmd.args
    if cmd.name in ("printf", "wait"):
        at = cmd.args.index("-v")
        names = cmd.args[at + 1:at + 2]
        if at + 2 in cmd.dynamic_args:
            return f"{cmd.name} -v sets a variable whose name is computed at run time"
    for word in names:
        hit = names_code_variable(word)
        if hit:
            return f"{cmd.name} sets {hit}, which makes the shell or a program run code that cannot be checked"
    return ""


def _has_script(cmd: ParsedCommand) -> bool:
    return any(not a.startswith("-") for a in cmd.args) or any(a in ("-c", "-e") for a in cmd.args)


def _outside(path: str) -> bool:
    if path in _HARMLESS_TARGETS or path.startswith("/dev/fd/") or path.isdigit() or path == "-":
        return False
    return path.startswith(("/", "~")) or ".." in path.split("/")


def _outside_write(cmd: ParsedCommand) -> str | None:
    """A path written outside the workspace, or one whose place is decided at run time
    (a relative path after a ``cd`` the policy cannot follow is one)."""
    lost = None in cmd.cwds
    for red in cmd.redirects:
        if red.writes and (red.dynamic or _outside(red.target) or (lost and _relative(red.target))):
            return red.target
    if cmd.name in FILE_CHANGING:
        for i, arg in _file_args(cmd):
            target = arg.split("=", 1)[1] if cmd.name == "dd" and arg.startswith("of=") else arg
            if not target.startswith("-") and (i in cmd.dynamic_args or _outside(target)
                                               or (lost and _relative(target))):
                return target
    return None


def _file_args(cmd: ParsedCommand) -> list[tuple[int, str]]:
    """The arguments of a file-changing program that may name files (``sed``'s script is not one)."""
    args = list(enumerate(cmd.args, start=1))
    if cmd.name != "sed":
        return args
    scripted = any(a in ("-e", "-f", "--expression", "--file") or a.startswith(("--expression=", "--file="))
                   for a in cmd.args)
    out: list[tuple[int, str]] = []
    skip_next = False
    for i, a in args:
        if skip_next:
            skip_next = False
            continue
        if a in ("-e", "--expression", "-f", "--file", "-l", "--line-length"):
            skip_next = True
            continue
        if not a.startswith("-") and not scripted:
            scripted = True  # the first operand is the script
            continue
        out.append((i, a))
    return out


def _relative(path: str) -> bool:
    return not (path in _HARMLESS_TARGETS or path.startswith(("/", "~", "&")) or path.isdigit() or path == "-")


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
    landed: list[tuple[int, str]] = []
    for i, word in words:
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if value and not value.startswith("-"):
            landed += [(i, where) for where in sorted({resolve(value, cwd) or "" for cwd in cmd.cwds}) if where]
    for i, word in landed:
        path = posixpath.normpath(word)
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
