"""Command wrappers: which word of ``nice -n 5 make``, ``timeout 5 X``, ``uv run X`` is the
command they run, read the way the wrapper reads its own options.

Fails closed: an option a wrapper table does not list (``nice --foo 5 X``: is ``5`` the
command?) or a program that runs its arguments in a way not unwrapped here (``parallel``,
``script -c``) is answered with a reason, never with a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})


@dataclass(frozen=True)
class _Options:
    """How a wrapper reads its options before the command it runs."""

    short_arg: str = ""
    """Short options taking an argument (``-n 5`` or ``-n5``)."""
    short_flags: str = ""
    """Short options without an argument."""
    long_arg: str = ""
    """Long options taking an argument, space-separated (``--signal 9`` or ``--signal=9``)."""
    long_flags: str = ""
    positional: int = 0
    """Words after the options and before the command (``timeout 5 X``: the duration)."""
    digits: bool = False
    """``-5`` is an option (``nice -5 X``)."""


# Wrappers whose options are known: anything else in an option position makes the wrapped
# command unresolved (GNU getopt also accepts unique prefixes of long options: resolved below).
_WRAPPERS: dict[str, _Options] = {
    "nohup": _Options(), "builtin": _Options(), "chronic": _Options(short_flags="ev"),
    # The policy reads bash's print of a line (bash_view), which names every coprocess:
    # `coproc X` is printed `coproc COPROC X`.
    "coproc": _Options(positional=1),
    "time": _Options(short_flags="p"), "unbuffer": _Options(short_flags="p"),
    "exec": _Options(short_arg="a", short_flags="cl"),
    "command": _Options(short_flags="p"),
    "setsid": _Options(short_flags="cfw", long_flags="ctty fork wait"),
    "stdbuf": _Options(short_arg="ioe", long_arg="input output error"),
    "nice": _Options(short_arg="n", long_arg="adjustment", digits=True),
    "ionice": _Options(short_arg="cn", short_flags="t", long_arg="class classdata", long_flags="ignore"),
    "timeout": _Options(short_arg="sk", short_flags="v", long_arg="signal kill-after",
                        long_flags="foreground preserve-status verbose", positional=1),
    "xargs": _Options(short_arg="ILnPsdEa", short_flags="0prtx",
                      long_arg="arg-file delimiter eof replace max-lines max-args max-procs max-chars",
                      long_flags="null interactive no-run-if-empty verbose exit open-tty"),
    "taskset": _Options(short_flags="ac", long_flags="all-tasks cpu-list", positional=1),
    "chrt": _Options(short_flags="bdfiomrRv", positional=1),
    "flock": _Options(short_arg="wE", short_flags="sxnuoFv", positional=1),
    "sudo": _Options(short_arg="ugChprtUTD", short_flags="AbEeHiKklnPSsv"),
    "doas": _Options(short_arg="uC", short_flags="ns"),
    "busybox": _Options(),
    "env": _Options(short_arg="uC", short_flags="i0v", long_arg="unset chdir",
                    long_flags="ignore-environment null debug"),
}
# Development tools whose subcommand runs the next word (``uv run pytest``): unwrapped only
# without options, since an option taking an argument would hide which word is the command.
_RUNNER_SUBCOMMANDS = {"uv": "run", "poetry": "run", "pipenv": "run", "pdm": "run", "hatch": "run",
                       "conda": "run", "bundle": "exec", "pnpm": "exec", "yarn": "exec", "npm": "exec",
                       "direnv": "exec", "mise": "exec", "pyenv": "exec", "rbenv": "exec"}
_RUNNERS_DIRECT = frozenset({"npx", "bunx", "pipx"})
RUNS_ITS_ARGUMENTS = frozenset({
    "parallel", "script", "su", "sg", "newgrp", "runcon", "setpriv", "prlimit", "numactl", "cgexec",
    "firejail", "proot", "fakeroot", "systemd-run", "xvfb-run", "dbus-run-session", "valgrind", "gdb",
    "catchsegv", "entr", "faketime", "torsocks", "proxychains", "proxychains4", "tsp", "at", "batch",
    "sem", "expect", "perf", "strace", "ltrace", "watch", "nsenter", "unshare", "chroot", "runuser",
    "pkexec", "capsh", "sshpass", "screen", "tmux", "dtach", "start-stop-daemon", "daemonize",
    "nix-shell", "devbox", "ip", "dbus-launch", "ssh-agent", "time-limit", "cpulimit", "trickle",
})
"""Programs that run a command taken from their arguments in a way not unwrapped here: the
command they run cannot be judged, so they count as unresolved."""


SHELL_ONLY_WORDS = frozenset({"coproc", "builtin"})
"""Wrappers of the table that exist only inside bash (a keyword and a builtin): after a program
wrapper (``env coproc X``) they are looked up as programs, which this table does not describe."""


def is_program_wrapper(label: str) -> bool:
    """True when ``label`` (how a command was reached) is a wrapper that is a program of its own
    (``env``, ``nice``, ``uv``), so the word it runs is found on PATH."""
    return label not in SHELL_ONLY_WORDS and label not in ("exec", "command", "time") and (
        label in _WRAPPERS or label in _RUNNER_SUBCOMMANDS or label in _RUNNERS_DIRECT)


def wrapped_start(name: str, argv: tuple[str, ...], dynamic_args: tuple[int, ...]) -> tuple[int | None, str]:
    """Where the command the wrapper ``name`` runs starts in ``argv``, or why that cannot be told
    (``dynamic_args``: indexes of words that come from an expansion)."""
    if name in _RUNNER_SUBCOMMANDS:
        if len(argv) < 3 or argv[1] != _RUNNER_SUBCOMMANDS[name]:
            return None, ""
        if argv[2].startswith("-"):
            return None, f"{name} {argv[1]} has options before the command it runs; they are not checked"
        return 2, ""
    if name in _RUNNERS_DIRECT:
        i = 2 if name == "pipx" and argv[1:2] == ("run",) else 1 if name != "pipx" else len(argv)
        if i < len(argv) and argv[i].startswith("-"):
            return None, f"{name} has options before the command it runs; they are not checked"
        return i, ""
    spec = _WRAPPERS.get(name)
    if spec is None:
        if name in RUNS_ITS_ARGUMENTS and len(argv) > 1:
            return None, f"{name!r} runs a command from its arguments, which this policy cannot see"
        return None, ""
    i = 1
    while i < len(argv):
        word = argv[i]
        if name == "env" and "=" in word and not word.startswith(("-", "=")):
            i += 1
            continue
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            if word == "-" and name == "env":
                i += 1
                continue
            break
        if i in dynamic_args:
            return None, f"{name} has an option {word!r} decided only when it runs"
        if word.startswith("--"):
            key, eq, _ = word[2:].partition("=")
            full = _long_option(key, spec)
            if full is None:
                return None, f"{name} has an option {word!r} this policy does not know"
            i += 2 if (full in spec.long_arg.split() and not eq) else 1
            continue
        if spec.digits and word[1:].isdigit():
            i += 1
            continue
        j = 1
        while j < len(word):
            if word[j] in spec.short_arg:
                i += 1 if j + 1 < len(word) else 2
                break
            if word[j] not in spec.short_flags:
                return None, f"{name} has an option {word!r} this policy does not know"
            j += 1
        else:
            i += 1
    return i + spec.positional, ""


def _long_option(key: str, spec: _Options) -> str | None:
    """The long option ``--key`` names: itself or the one option it is a unique prefix of."""
    known = spec.long_arg.split() + spec.long_flags.split()
    if key in known:
        return key
    hits = [k for k in known if k.startswith(key)] if key else []
    return hits[0] if len(hits) == 1 else None


def shell_script_index(argv: tuple[str, ...]) -> int | None:
    """For ``bash [options] [-c] SCRIPT...``: the index of the ``-c`` script, 0 when the shell
    runs a file or reads stdin, None when an option is not known."""
    run_string = False
    i = 1
    while i < len(argv):
        word = argv[i]
        if word == "--" or word == "-":
            i += 1
            break
        if word.startswith("--"):
            if word in ("--rcfile", "--init-file"):
                i += 2
                continue
            if word[2:] not in ("login", "noprofile", "norc", "posix", "restricted", "verbose", "noediting",
                                "debugger", "dump-strings", "pretty-print", "help", "version"):
                return None
            i += 1
            continue
        if not word.startswith(("-", "+")):
            break
        flags = word[1:]
        if not re.fullmatch(r"[abcefhiklmnprstuvxBCEHPTsoO]*", flags):
            return None
        run_string |= "c" in flags
        i += 2 if flags.endswith(("o", "O")) else 1
    return i if run_string else 0
